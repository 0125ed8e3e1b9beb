// dpushard exec FILE.xmodel [--backend ref] [--input PATH ... | --seed S] [--repeat N]
//                           [--output DIR [--float] [--top-k K]]
//                           [--threads T] [--weights-from FILE_int.xmodel] [--json]
// Runs frames of an `_int` model on one backend and reports the input and output tensors
// (shape, fix point, sha256, top-5 for classifier outputs) and the per-frame latency. An
// --input is a .npy (one frame or a batch), an image or a folder of them (frame_source.hpp);
// every frame runs --repeat times, and --output writes each frame's outputs. A
// compiled model runs as it is on a backend whose traits take compiled files (vart runs it
// on the DPU, sim times it); the others run its DPU computation lowered to `_int` ops
// (lower_compiled.hpp), weights from --weights-from.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/frames/frame_source.hpp"
#include "dpushard/graph/numerics.hpp"
#include "dpushard/graph/preprocessing.hpp"
#include "dpushard/xmodel/lower_compiled.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "frame_loop.hpp"
#include "read_model.hpp"

namespace dpushard::cli {
namespace {

struct ExecOptions {
  std::string file;
  std::string backend = "ref";
  std::vector<std::string> inputs;
  std::uint64_t seed = 0;
  int repeat = 1;
  int threads = 1;
  std::string weights_from;  // the `_int` file a compiled FILE was made from
  OutputOptions output;
  bool json = false;
};

// Whether the backend loads a compiled file as it is (its traits); an unknown name is left
// to make_backend's error.
bool runs_compiled_files(const std::string& backend) {
  const auto descriptor = find_backend(backend);
  return descriptor && descriptor->traits.compiled != CompiledModels::Lowered;
}

// What the backend loads: the file itself, or a compiled file's DPU computation as `_int`
// ops, with the compiled file's input and output names.
Graph graph_to_run(const ExecOptions& o, const Graph& graph) {
  if (!is_compiled(graph) || runs_compiled_files(o.backend)) {
    if (!o.weights_from.empty())
      throw Error(
          "--weights-from is for a compiled model run on a backend that runs `_int` "
          "ops (ref, cpu); '" +
          o.file + "' on '" + o.backend + "' does not use it");
    return graph;
  }
  if (o.weights_from.empty()) {
    try {
      return lower_compiled(graph);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (--weights-from FILE_int.xmodel)");
    }
  }
  const Graph int_graph = read_model(o.weights_from);
  return lower_compiled(graph, &int_graph);
}

// The frames to run: the --input paths, or one frame of seeded random int8 tensors.
FrameSource make_source(const ExecOptions& o, const Graph& graph) {
  std::vector<InputSpec> specs;
  for (const QTensor& spec : input_specs(graph))
    specs.push_back(
        {spec.name, spec.shape, spec.fix_point,
         parse_round_mode(string_attr(graph.op(spec.name).attrs, "round_mode", "DPU_ROUND"))});
  if (!o.inputs.empty())
    return FrameSource(o.inputs, std::move(specs), recorded_preprocessing(graph), o.file);
  return FrameSource(std::move(specs), o.seed);
}

// The five largest values of a single-row output (a classifier), ties to the lower index.
bool is_classifier(const QTensor& t) {
  return !t.shape.empty() && t.shape.back() >= 2 && t.element_count() == t.shape.back();
}

nlohmann::json top5(const QTensor& t) {
  std::vector<std::size_t> order(t.data.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.data[a] > t.data[b]; });
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < std::min<std::size_t>(5, order.size()); ++i)
    out.push_back({{"class", order[i]}, {"value", dequantize(t.data[order[i]], t.fix_point)}});
  return out;
}

nlohmann::json describe(const QTensor& t, bool with_top5) {
  nlohmann::json j = {{"name", t.name}, {"shape", t.shape}, {"fix_point", t.fix_point}};
  // A timing-only backend (sim without numerics) outputs zeros: no hash is claimed.
  if (!t.computed) {
    j["sha256"] = nullptr;
    j["computed"] = false;
    return j;
  }
  j["sha256"] = sha256_hex(t.data);
  if (with_top5 && is_classifier(t)) j["top5"] = top5(t);
  return j;
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

std::string dims_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

void print_human(const nlohmann::json& r) {
  std::ostringstream out;
  out << "exec " << r["file"].get<std::string>() << " on " << r["backend"].get<std::string>()
      << " (" << r["threads"] << " thread" << (r["threads"] == 1 ? "" : "s") << "): " << r["frames"]
      << " frame" << (r["frames"] == 1 ? "" : "s");
  if (r["latency_ms"]["median"].is_null())
    out << ", none ran";
  else
    out << ", latency median " << r["latency_ms"]["median"].get<double>() << " ms (min "
        << r["latency_ms"]["min"].get<double>() << ", max " << r["latency_ms"]["max"].get<double>()
        << ")";
  out << ", load " << r["load_ms"].get<double>() << " ms\n";
  if (r.contains("results")) {
    out << "  " << r["input_frames"] << " inputs, " << r["errors"].size() << " failed";
    if (r.contains("output_dir")) out << ", outputs in " << r["output_dir"].get<std::string>();
    out << "\n";
    for (const auto& frame : r["results"]) {
      out << "  [" << frame["index"] << "] " << frame["file"].get<std::string>();
      for (const auto& t : frame["outputs"])
        if (t.contains("top5")) {
          out << "  top5:";
          for (const auto& c : t["top5"]) out << " " << c["class"];
        }
      out << "\n";
    }
    out << "  first input's tensors:\n";
  }
  for (const char* kind : {"inputs", "outputs"})
    for (const auto& t : r[kind]) {
      out << "  " << (kind[0] == 'i' ? "in " : "out") << "  " << t["name"].get<std::string>()
          << "  " << dims_text(t["shape"].get<std::vector<std::int64_t>>()) << "  fp "
          << t["fix_point"] << "  sha256 "
          << (t["sha256"].is_string() ? t["sha256"].get<std::string>() : "(not computed)") << "\n";
      if (t.contains("top5")) {
        out << "        top5:";
        for (const auto& c : t["top5"])
          out << " " << c["class"] << " (" << c["value"].get<double>() << ")";
        out << "\n";
      }
    }
  std::cerr << out.str();
}

int run_exec(const ExecOptions& o) {
  using Clock = std::chrono::steady_clock;
  const Graph graph = read_model(o.file);
  BackendOptions backend_options;
  backend_options.threads = o.threads;
  std::unique_ptr<Backend> backend = make_backend(o.backend, backend_options);
  const FrameSource source = make_source(o, graph);
  print_notes(source);
  const Graph to_run = graph_to_run(o, graph);
  const std::unique_ptr<FrameOutputWriter> writer = make_output_writer(o.output);

  const auto load_start = Clock::now();
  backend->load(to_run);
  const double load_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - load_start).count();

  const FramesRun run = run_frames(
      source, [&](const std::vector<QTensor>& inputs) { return backend->run(inputs); }, o.repeat,
      [](const QTensor& t) { return describe(t, true); }, writer.get());
  const std::vector<double>& latencies = run.latencies_ms;

  nlohmann::json latency = {{"median", nullptr}, {"min", nullptr}, {"max", nullptr}};
  if (!latencies.empty())
    latency = {{"median", median_of(latencies)},
               {"min", *std::min_element(latencies.begin(), latencies.end())},
               {"max", *std::max_element(latencies.begin(), latencies.end())}};
  nlohmann::json report = {{"file", o.file},
                           {"backend", std::string(backend->name())},
                           {"threads", o.threads},
                           {"repeat", o.repeat},
                           {"frames", latencies.size()},
                           {"load_ms", load_ms},
                           {"latency_ms", latency},
                           {"inputs", nlohmann::json::array()},
                           {"outputs", nlohmann::json::array()}};
  // The first frame's tensors, as for one input; every frame's outputs when there are more.
  for (const auto& t : run.first_inputs) report["inputs"].push_back(describe(t, false));
  for (const auto& t : run.first_outputs) report["outputs"].push_back(describe(t, true));
  if (run.frames > 1 || !run.errors.empty()) {
    report["input_frames"] = run.frames;
    report["results"] = run.results;
    report["errors"] = run.errors;
  }
  if (writer) report["output_dir"] = o.output.dir;
  if (o.json)
    print_json(report);
  else
    print_human(report);
  return frames_exit_code(run);
}

}  // namespace

Command add_exec_command(CLI::App& app) {
  auto options = std::make_shared<ExecOptions>();
  ExecOptions& o = *options;
  CLI::App* sub =
      app.add_subcommand("exec", "Run frames of an _int or compiled model on one backend");
  sub->add_option("file", o.file, "The _int or compiled xmodel to run")->required();
  sub->add_option(
         "--backend", o.backend,
         "Backend: " +
             [] {
               std::string names;
               for (const auto& n : backend_names()) names += (names.empty() ? "" : ", ") + n;
               return names;
             }())
      ->capture_default_str();
  auto* input =
      sub->add_option("--input", o.inputs,
                      "One path per model input: a .npy (one frame or a batch; int8 as is, float32 "
                      "quantized), a JPEG/PNG image, or a folder of them (name order)");
  sub->add_option("--seed", o.seed, "Seed of the random int8 inputs")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber)  // CLI11 would read -1 as 2^64-1
      ->excludes(input);
  sub->add_option("--repeat", o.repeat, "Frames to run; latency is their median")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  sub->add_option("--threads", o.threads, "Worker threads for backends that use them")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--weights-from", o.weights_from,
                  "A compiled FILE on ref or cpu: the _int xmodel it was compiled from, whose "
                  "weights the compiled file does not carry");
  add_output_options(*sub, o.output);
  sub->add_flag("--json", o.json, "Print the result as one JSON object on stdout");
  return {sub, [options] { return run_exec(*options); }};
}

}  // namespace dpushard::cli
