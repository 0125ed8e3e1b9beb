// dpushard run PLAN_DIR --local [--backend ref|cpu] [--input FILE.npy ... | --seed S]
//                               [--threads T] [--json]
// Runs a split plan's fragments in plan order in this process and reports the model's
// outputs exactly as `dpushard exec` does, so their sha256 can be compared with the whole
// model's. Inputs are seeded random int8 tensors, or .npy files (one per model input, as
// `exec --input`: int8 as is, float32 quantized with the input's fix point).

#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/backend.hpp"
#include "dpushard/local_run.hpp"
#include "dpushard/plan_format.hpp"
#include "dpushard/plan_yaml.hpp"
#include "npy_input.hpp"
#include "run_cluster.hpp"
#include "usage_error.hpp"

namespace dpushard::cli {
namespace {

struct RunOptions {
  std::string plan_dir;
  bool local = false;
  std::string backend = "ref";
  std::uint64_t seed = 0;
  std::vector<std::string> inputs;  // .npy files, one per model input
  int threads = 1;
  bool json = false;
};

int run_run(const RunOptions& o) {
  if (!o.local)
    throw UsageError(
        "run: say where to run the plan: --local (in this process) or --cluster "
        "cluster.yaml (on its workers)");
  using Clock = std::chrono::steady_clock;
  const Plan plan = read_plan(o.plan_dir);
  std::vector<QTensor> inputs;
  if (!o.inputs.empty()) {
    std::vector<InputSpec> specs;
    for (const auto& t : plan.model_inputs)
      specs.push_back({t.name, t.shape, t.fix_point, t.round_mode});
    inputs = inputs_from_npy(o.inputs, specs, o.plan_dir);
  } else {
    for (const auto& t : plan.model_inputs)
      inputs.push_back(random_qtensor(t.name, t.shape, t.fix_point, o.seed));
  }
  LocalRunOptions options;
  options.backend = o.backend;
  options.threads = o.threads;
  const auto start = Clock::now();
  const std::vector<QTensor> outputs = run_plan_locally(plan, o.plan_dir, inputs, options);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  nlohmann::json report = {{"file", o.plan_dir},
                           {"plan", o.plan_dir},
                           {"strategy", plan.strategy},
                           {"fragments", plan.fragments.size()},
                           {"backend", o.backend},
                           {"threads", o.threads},
                           {"repeat", 1},
                           {"frames", 1},
                           {"latency_ms", {{"median", ms}, {"min", ms}, {"max", ms}}},
                           {"inputs", nlohmann::json::array()},
                           {"outputs", nlohmann::json::array()}};
  for (const auto& t : inputs) report["inputs"].push_back(tensor_json(t, false));
  for (const auto& t : outputs) report["outputs"].push_back(tensor_json(t, true));
  if (o.json) {
    print_json(report);
    return 0;
  }
  std::ostringstream out;
  out << "run " << o.plan_dir << " locally on " << o.backend << ": " << plan.fragments.size()
      << " fragments (" << plan.strategy << "), " << ms << " ms including loading\n";
  for (const auto& t : report["outputs"])
    out << "  out  " << t["name"].get<std::string>() << "  fp " << t["fix_point"] << "  sha256 "
        << t["sha256"].get<std::string>() << "\n";
  std::cerr << out.str();
  return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  RunOptions& o = *options;
  CLI::App* sub = app.add_subcommand("run", "Run a split plan (in-process with --local)");
  sub->add_option("plan", o.plan_dir, "The plan folder (plan.yaml + fragments/)")->required();
  sub->add_flag("--local", o.local, "Run every fragment in this process, in plan order");
  sub->add_option(
         "--backend", o.backend,
         "Backend: " +
             [] {
               std::string names;
               for (const auto& n : backend_names()) names += (names.empty() ? "" : ", ") + n;
               return names;
             }())
      ->capture_default_str();
  auto* seed = sub->add_option("--seed", o.seed, "Seed of the random int8 inputs (as exec --seed)")
                   ->capture_default_str()
                   ->check(CLI::NonNegativeNumber);
  sub->add_option("--input", o.inputs,
                  "--local: one .npy per model input (int8 as is, float32 quantized)")
      ->excludes(seed);
  sub->add_option("--threads", o.threads, "Worker threads for backends that use them")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_flag("--json", o.json, "Print the result as one JSON object on stdout");
  const auto cluster = add_cluster_run_options(*sub);  // --cluster: tools/run_cluster.cpp
  return {sub, [options, cluster] {
            if (!cluster->cluster_file.empty() && !options->inputs.empty())
              throw UsageError("run: --input works with --local only (cluster runs use --seed)");
            if (!cluster->cluster_file.empty())
              return run_cluster(options->plan_dir, *cluster, options->seed, options->json);
            return run_run(*options);
          }};
}

}  // namespace dpushard::cli
