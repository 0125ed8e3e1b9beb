// dpushard oracle learn COMPILED_DIR -o ORACLE.yaml [--base FILE] [--vitis-ai-version V]
//                       [--arch-json FILE] [--json]
// dpushard oracle diff A B
// Learning the compiler oracle from compiled micro-models, and what changed between two
// oracles (docs/splitting.md, "Learning and comparing oracles").

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/split/oracle_learn.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/micro.hpp"
#include "usage_error.hpp"

namespace dpushard::cli {
namespace {

namespace fs = std::filesystem;

struct LearnOptions {
  std::string dir;
  std::string output;
  std::string base;
  std::string vitis_ai;
  std::string arch_json;
  bool json = false;
};

struct DiffOptions {
  std::string a;
  std::string b;
};

// An oracle file, or the word `builtin` for the shipped one.
Oracle load_oracle(const std::string& where) {
  if (where == "builtin") return Oracle::builtin();
  if (fs::is_directory(where)) throw Error("oracle " + where + ": is a directory, not a YAML file");
  return Oracle::load(where);
}

// The "fingerprint" field of an arch.json, as text; empty when it has none.
std::string arch_fingerprint(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not a JSON file (" + std::string(e.what()) + ")");
  }
  if (!j.is_object() || !j.contains("fingerprint")) return "";
  const auto& f = j["fingerprint"];
  return f.is_string() ? f.get<std::string>() : f.dump();
}

int run_learn(const LearnOptions& o) {
  if (!fs::exists(o.dir)) throw Error(o.dir + ": no such folder");
  if (!fs::is_directory(o.dir)) throw Error(o.dir + ": not a folder of compiled xmodel files");
  std::unique_ptr<Oracle> loaded;
  if (!o.base.empty()) loaded = std::make_unique<Oracle>(load_oracle(o.base));
  const Oracle& base = loaded ? *loaded : Oracle::builtin();

  std::set<std::string> known;
  for (const auto& m : micro_models()) known.insert(m.name);
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(o.dir, ec))
    if (entry.path().extension() == ".xmodel") files.push_back(entry.path());
  if (ec) throw Error(o.dir + ": cannot list (" + ec.message() + ")");
  if (files.empty())
    throw Error(o.dir +
                ": no .xmodel files (expected <micro-model>.xmodel as vai_c_xir -n writes)");
  std::sort(files.begin(), files.end());

  std::map<std::string, CompiledVerdict> verdicts;
  for (const auto& file : files) {
    const std::string stem = file.stem().string();
    if (!known.count(stem))
      throw Error(file.string() + ": '" + stem +
                  "' is not a micro-model (see `dpushard zoo micro --list`)");
    verdicts[stem] = judge_compiled(read_xmodel(file), base, file.string());
  }
  std::vector<std::string> missing;
  for (const auto& m : micro_models())
    if (!verdicts.count(m.name)) missing.push_back(m.name);

  LearnProvenance provenance;
  provenance.vitis_ai = o.vitis_ai;
  provenance.compiled_dir = o.dir;
  if (!o.arch_json.empty()) {
    provenance.arch_json_sha256 = sha256_file(o.arch_json);
    provenance.arch_fingerprint = arch_fingerprint(o.arch_json);
  }
  const std::string text = learned_oracle_yaml(base, verdicts, provenance);
  Oracle::parse(text, o.output);  // never write a file the planner cannot read back
  write_oracle_file(o.output, text);

  nlohmann::json models = nlohmann::json::array();
  std::ostringstream human;
  int changed = 0;
  for (const auto& [name, v] : verdicts) {
    const auto expected = base.expected(name);
    const bool differs = !expected || *expected != v.verdict;
    changed += differs ? 1 : 0;
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : v.findings)
      findings.push_back({{"op", f.op},
                          {"type", f.type},
                          {"rule", f.rule},
                          {"verdict", verdict_name(f.verdict)},
                          {"reason", f.reason}});
    models.push_back({{"name", name},
                      {"verdict", verdict_name(v.verdict)},
                      {"base_expected", expected ? nlohmann::json(verdict_name(*expected))
                                                 : nlohmann::json(nullptr)},
                      {"dpu_subgraphs", v.dpu_subgraphs},
                      {"cpu_subgraphs", v.cpu_subgraphs},
                      {"findings", findings}});
    human << "  " << name << std::string(name.size() < 22 ? 22 - name.size() : 1, ' ')
          << verdict_name(v.verdict);
    if (differs)
      human << "  (base " << (expected ? std::string(verdict_name(*expected)) : "not listed")
            << ")";
    human << "\n";
    for (const auto& f : v.findings) human << "      " << f.rule << ": " << f.reason << "\n";
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    std::cerr << "dpushard: warning: " << missing.size()
              << " micro-models have no compiled file in " << o.dir << " and are left out: " << list
              << "\n";
  }
  if (o.json) {
    print_json({{"oracle", o.output},
                {"base", base.name()},
                {"learned", models.size()},
                {"differ_from_base", changed},
                {"missing", missing},
                {"models", models}});
  } else {
    std::cerr << verdicts.size() << " compiled micro-models, " << changed << " differ from oracle "
              << base.name() << "; written to " << o.output << ":\n"
              << human.str();
  }
  return 0;
}

// 0: equal; 1: different; 2: a file could not be read (as diff(1)).
int run_diff(const DiffOptions& o) {
  std::vector<std::string> lines;
  try {
    lines = diff_oracles(load_oracle(o.a), load_oracle(o.b));
  } catch (const std::exception& e) {
    throw UsageError(e.what());  // exit 2, one line
  }
  for (const auto& line : lines) std::cout << line << "\n";
  std::cout << std::flush;
  if (lines.empty()) std::cerr << "oracles are equal\n";
  return lines.empty() ? 0 : 1;
}

}  // namespace

Command add_oracle_command(CLI::App& app) {
  auto learn = std::make_shared<LearnOptions>();
  auto diff = std::make_shared<DiffOptions>();
  CLI::App* sub = app.add_subcommand(
      "oracle", "Learn the compiler oracle from compiled micro-models; compare two oracles");
  sub->require_subcommand(1);

  CLI::App* l = sub->add_subcommand(
      "learn", "Derive each micro-model's verdict from its compiled xmodel (vai_c_xir output)");
  l->add_option("dir", learn->dir, "Folder of compiled files, <micro-model>.xmodel")->required();
  l->add_option("-o,--output", learn->output, "The oracle YAML to write")->required();
  l->add_option("--base", learn->base,
                "Oracle whose rules the learned one keeps (a file or 'builtin'; default builtin)");
  l->add_option("--vitis-ai-version", learn->vitis_ai,
                "Vitis AI version that compiled the files (recorded in learned_from)");
  l->add_option("--arch-json", learn->arch_json,
                "The arch.json they were compiled for (its sha256 and fingerprint are recorded)");
  l->add_flag("--json", learn->json, "Print the verdicts as one JSON object on stdout");

  CLI::App* d = sub->add_subcommand(
      "diff", "What changed from oracle A to oracle B, one line each; exit 0 equal, 1 different");
  d->add_option("a", diff->a, "Oracle YAML, or 'builtin'")->required();
  d->add_option("b", diff->b, "Oracle YAML, or 'builtin'")->required();

  return {sub, [learn, diff, l, d]() -> int {
            if (l->parsed()) return run_learn(*learn);
            if (d->parsed()) return run_diff(*diff);
            throw UsageError("oracle: give learn or diff");
          }};
}

}  // namespace dpushard::cli
