// dpushard plan check-compiled PLAN_DIR [--allow-cpu-subgraphs] [--dpu-fingerprint HEX]
// dpushard plan add-compiled PLAN_DIR FRAGMENT FILE
// The compiled fragments of a plan (docs/plan.md, "Compiled fragments"): check them against
// the plan, and record one that vai_c_xir made (path, sha256, DPU fingerprint).

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "commands.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/compiled_check.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard::cli {
namespace {

struct PlanArgs {
  std::string plan_dir;
  bool allow_cpu_subgraphs = false;
  std::string dpu_fingerprint;
  std::string fragment;
  std::string file;
};

// The plan folder, also when given as its plan.yaml (read_plan takes either).
std::filesystem::path plan_folder(const std::string& given) {
  const std::filesystem::path path(given);
  return std::filesystem::is_regular_file(path) ? path.parent_path() : path;
}

int check_compiled(const PlanArgs& a) {
  const Plan plan = read_plan(a.plan_dir);
  if (!has_compiled_fragments(plan))
    throw Error("plan " + a.plan_dir + ": no fragment records a compiled file (plan add-compiled)");
  CompiledCheckOptions options;
  options.allow_cpu_subgraphs = a.allow_cpu_subgraphs;
  if (!a.dpu_fingerprint.empty())
    options.target_fingerprint = parse_fingerprint(a.dpu_fingerprint, "--dpu-fingerprint");
  for (const std::string& warning : check_compiled_plan(plan, plan_folder(a.plan_dir), options))
    std::cerr << "dpushard: warning: " << warning << "\n";
  int compiled = 0;
  for (const PlanFragment& f : plan.fragments) compiled += f.compiled ? 1 : 0;
  std::cerr << "plan " << a.plan_dir << ": " << compiled << " of " << plan.fragments.size()
            << " fragments compiled, each matching its plan\n";
  return 0;
}

// FILE relative to the plan folder (it must lie inside it, as the plan's own files do).
std::string relative_inside(const std::filesystem::path& dir, const std::string& file) {
  const auto root = std::filesystem::weakly_canonical(dir);
  const auto path = std::filesystem::weakly_canonical(file);
  const auto rel = path.lexically_relative(root);
  if (rel.empty() || rel.is_absolute() || *rel.begin() == "..")
    throw Error("plan add-compiled: " + file + " is not inside the plan folder " + dir.string());
  return rel.generic_string();
}

int add_compiled(const PlanArgs& a) {
  Plan plan = read_plan(a.plan_dir);
  PlanFragment* fragment = nullptr;
  for (PlanFragment& f : plan.fragments)
    if (f.name == a.fragment) fragment = &f;
  if (fragment == nullptr) (void)plan.fragment(a.fragment);  // throws, naming the fragment
  const std::filesystem::path dir = plan_folder(a.plan_dir);
  const std::string rel = relative_inside(dir, a.file);
  const Graph compiled = read_xmodel(a.file);
  fragment->compiled = PlanCompiled{rel, sha256_file(a.file),
                                    compiled_fingerprint(compiled, "plan add-compiled: " + a.file)};
  // Only a file that matches the plan is recorded; a surprise CPU op may be let through.
  CompiledCheckOptions options;
  options.allow_cpu_subgraphs = a.allow_cpu_subgraphs;
  for (const std::string& warning : check_compiled_fragment(*fragment, compiled, options))
    std::cerr << "dpushard: warning: " << warning << "\n";
  write_plan(plan, dir);
  std::cerr << "plan " << a.plan_dir << ": fragment '" << a.fragment << "' compiled as " << rel
            << " for DPU " << fingerprint_text(fragment->compiled->dpu_fingerprint) << "\n";
  return 0;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* sub = app.add_subcommand("plan", "Work on a split plan's compiled fragments");
  sub->require_subcommand(1);
  CLI::App* check = sub->add_subcommand(
      "check-compiled",
      "Check every compiled fragment against the plan (boundary, placement, DPU)");
  check->add_option("plan", args->plan_dir, "The plan folder")->required();
  check->add_flag("--allow-cpu-subgraphs", args->allow_cpu_subgraphs,
                  "An op the oracle put on the DPU but the compiler on the CPU is a warning");
  check->add_option("--dpu-fingerprint", args->dpu_fingerprint,
                    "The target DPU's fingerprint (xdputil query), e.g. 0x101000016010407");
  CLI::App* add = sub->add_subcommand(
      "add-compiled", "Record a fragment's compiled file (path, sha256, DPU fingerprint)");
  add->add_option("plan", args->plan_dir, "The plan folder")->required();
  add->add_option("fragment", args->fragment, "The fragment's name in the plan")->required();
  add->add_option("file", args->file, "The compiled .xmodel, inside the plan folder")
      ->required()
      ->check(CLI::ExistingFile);
  add->add_flag("--allow-cpu-subgraphs", args->allow_cpu_subgraphs,
                "Record it even with ops on the CPU the oracle put on the DPU (warned)");
  return {sub, [args, check, add] {
            if (check->parsed()) return check_compiled(*args);
            if (add->parsed()) return add_compiled(*args);
            return 0;
          }};
}

}  // namespace dpushard::cli
