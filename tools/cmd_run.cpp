// dpushard run PLAN_DIR --local [--backend ref|cpu] [--input PATH ... | --seed S]
//                               [--output DIR [--float] [--top-k K]] [--threads T] [--json]
// (and --cluster C with the same --input/--output: tools/run_cluster.cpp)
// Runs a split plan's fragments in plan order in this process and reports the model's
// outputs exactly as `dpushard exec` does, so their sha256 can be compared with the whole
// model's. Inputs are seeded random int8 tensors, or one path per model input as `exec
// --input` takes it (a .npy frame or batch, an image, a folder: frame_source.hpp); images
// use the preprocessing block the plan's fragments carry from the model.

#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/frames/frame_source.hpp"
#include "dpushard/plan/local_run.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "frame_loop.hpp"
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
  OutputOptions output;
  bool json = false;
};

int run_run(const RunOptions& o) {
  if (!o.local)
    throw UsageError(
        "run: say where to run the plan: --local (in this process) or --cluster "
        "cluster.yaml (on its workers)");
  using Clock = std::chrono::steady_clock;
  const Plan plan = read_plan(o.plan_dir);
  LocalRunOptions options;
  options.backend = o.backend;
  options.threads = o.threads;
  const auto start = Clock::now();
  LocalPlanRunner runner(plan, o.plan_dir, options);
  std::vector<InputSpec> specs;
  for (const auto& t : plan.model_inputs)
    specs.push_back({t.name, t.shape, t.fix_point, t.round_mode});
  const FrameSource source = o.inputs.empty() ? FrameSource(std::move(specs), o.seed)
                                              : FrameSource(o.inputs, std::move(specs),
                                                            runner.preprocessing(), o.plan_dir);
  print_notes(source);
  const std::unique_ptr<FrameOutputWriter> writer = make_output_writer(o.output);
  const FramesRun run = run_frames(
      source, [&](const std::vector<QTensor>& inputs) { return runner.run(inputs); }, 1,
      [](const QTensor& t) { return tensor_json(t, true); }, writer.get());
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  const std::vector<QTensor>& inputs = run.first_inputs;
  const std::vector<QTensor>& outputs = run.first_outputs;

  nlohmann::json report = {{"file", o.plan_dir},
                           {"plan", o.plan_dir},
                           {"strategy", plan.strategy},
                           {"fragments", plan.fragments.size()},
                           {"backend", o.backend},
                           {"threads", o.threads},
                           {"repeat", 1},
                           {"frames", run.results.size()},
                           {"latency_ms", {{"median", ms}, {"min", ms}, {"max", ms}}},
                           {"inputs", nlohmann::json::array()},
                           {"outputs", nlohmann::json::array()}};
  for (const auto& t : inputs) report["inputs"].push_back(tensor_json(t, false));
  for (const auto& t : outputs) report["outputs"].push_back(tensor_json(t, true));
  if (run.frames > 1 || !run.errors.empty()) {
    report["input_frames"] = run.frames;
    report["results"] = run.results;
    report["errors"] = run.errors;
  }
  if (writer) report["output_dir"] = o.output.dir;
  if (o.json) {
    print_json(report);
    return frames_exit_code(run);
  }
  std::ostringstream out;
  out << "run " << o.plan_dir << " locally on " << o.backend << ": " << plan.fragments.size()
      << " fragments (" << plan.strategy << "), " << run.results.size() << " frame"
      << (run.results.size() == 1 ? "" : "s") << ", " << ms << " ms including loading\n";
  if (run.frames > 1 || !run.errors.empty())
    for (const auto& frame : run.results) {
      out << "  [" << frame["index"] << "] " << frame["file"].get<std::string>();
      for (const auto& t : frame["outputs"])
        out << "  " << t["name"].get<std::string>() << " sha256 "
            << t["sha256"].get<std::string>().substr(0, 16);
      out << "\n";
    }
  for (const auto& t : report["outputs"])
    out << "  out  " << t["name"].get<std::string>() << "  fp " << t["fix_point"] << "  sha256 "
        << t["sha256"].get<std::string>() << "\n";
  if (writer) out << "  outputs in " << o.output.dir << "\n";
  std::cerr << out.str();
  return frames_exit_code(run);
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
                  "One path per model input: a .npy (one frame or a batch), an image, or a "
                  "folder of them (as exec --input)")
      ->excludes(seed);
  add_output_options(*sub, o.output);
  sub->add_option("--threads", o.threads, "Worker threads for backends that use them")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_flag("--json", o.json, "Print the result as one JSON object on stdout");
  const auto cluster = add_cluster_run_options(*sub);  // --cluster: tools/run_cluster.cpp
  return {sub, [sub, options, cluster] {
            if (!cluster->cluster_file.empty()) {
              if (!options->inputs.empty() && sub->count("--frames") > 0)
                throw UsageError("run: --frames and --input: the frames are the input's");
              if (options->inputs.empty() && !options->output.dir.empty())
                throw UsageError("run: --output with --cluster needs --input");
              return run_cluster(options->plan_dir, *cluster, options->seed, options->json,
                                 options->inputs, options->output);
            }
            return run_run(*options);
          }};
}

}  // namespace dpushard::cli
