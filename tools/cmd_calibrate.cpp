// dpushard calibrate MODEL|DIR... -o TARGET.yaml [--target kv260|FILE.yaml] [--name NAME]
//                    [--backend vart] [--cpu-backend ref|cpu] [--frames N] [--warmup W]
//                    [--passes P] [--statistic median|min] [--json]
// On a board: times one frame at a time of every compiled model given (the compiled
// micro-models and a few whole models) through the runtime, fits the target's DPU efficiency,
// latency floors and host figures to those times by least squares (dpushard/perf/calibrate.hpp),
// with the CPU fallback rates of the A53 path when a model has CPU ops after its DPU subgraph
// (run on the host with --cpu-backend, cpu_path.hpp), and writes the calibrated target YAML with
// the fit's residuals per model (docs/perf.md "Calibration from a board").

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "cpu_path.hpp"
#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/base/regular_file.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/perf/calibrate.hpp"
#include "dpushard/perf/perf.hpp"
#include "read_model.hpp"

namespace dpushard::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  std::vector<std::string> models;
  std::string output;
  std::string target = "kv260";
  std::string name;
  std::string backend = "vart";
  std::string cpu_backend;  // the CPU subgraphs' host backend: default cpu where built, else ref
  int frames = 20;
  int warmup = 3;
  int passes = 1;
  std::string statistic = "median";
  bool json = false;
};

struct Timed {
  std::string file;
  double median_ms = 0;
  double fitted_ms = 0;  // the median, or the minimum with --statistic min
  double min_ms = 0;
  double max_ms = 0;
};

struct Skipped {
  std::string file;
  std::string reason;
};

// The files to time: each MODEL as given, each DIR's *.xmodel in name order.
std::vector<fs::path> model_files(const std::vector<std::string>& args) {
  std::vector<fs::path> files;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.path().extension() == ".xmodel") found.push_back(entry.path());
      if (found.empty()) throw Error("calibrate: '" + arg + "' holds no .xmodel file");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(arg, ec)) {
      files.emplace_back(arg);
    } else {
      throw Error("calibrate: '" + arg + "': no such file or folder");
    }
  }
  return files;
}

// One frame of a model: its DPU subgraph through the backend, then its CPU ops (if any) on
// the host, as the board runs them.
class Frame {
 public:
  Frame(const Graph& graph, const CalibrateOptions& o) : cpu_path_(split_cpu_path(graph)) {
    backend_ = make_backend(o.backend);
    backend_->load(cpu_path_ ? cpu_path_->dpu : graph);
    for (const QTensor& spec : input_specs(graph))
      inputs_.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 1));
    if (cpu_path_) {
      BackendOptions options;
      options.threads = 1;  // one A53 core per frame, as the target's rates are
      host_ = make_backend(o.cpu_backend, options);
      host_->load(cpu_path_->cpu);
      host_specs_ = input_specs(cpu_path_->cpu);
    }
  }
  void run() {
    const std::vector<QTensor> outputs = backend_->run(inputs_);
    if (host_) host_->run(cpu_inputs(*cpu_path_, host_specs_, outputs));
  }

 private:
  std::optional<CpuPath> cpu_path_;
  std::unique_ptr<Backend> backend_, host_;
  std::vector<QTensor> inputs_, host_specs_;
};

// A model being timed: its frames' times so far, or that it failed (skipped).
struct Timing {
  fs::path file;
  Graph graph;
  std::vector<double> ms;
  bool failed = false;
};

Timed summary(const Timing& t, const CalibrateOptions& o) {
  std::vector<double> ms = t.ms;
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  const double median = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return {t.file.string(), median, o.statistic == "min" ? ms.front() : median, ms.front(),
          ms.back()};
}

std::string base_yaml(const std::string& target) {
  std::error_code ec;
  if (fs::exists(target, ec)) return RegularFile(target, "target '" + target + "'").read_all();
  return std::string(builtin_target_yaml(target));
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json fit_json(const CalibrationFit& fit) {
  nlohmann::json parameters = nlohmann::json::array();
  for (const CalibrationParameter& p : fit.parameters)
    parameters.push_back({{"name", p.name},
                          {"fitted", p.fitted},
                          {"value", p.value},
                          {"base", p.base},
                          {"std_error", p.std_error},
                          {"note", p.note}});
  nlohmann::json residuals = nlohmann::json::array();
  for (const CalibrationResidual& r : fit.residuals)
    residuals.push_back({{"model", r.name},
                         {"measured_ms", r.measured_ms},
                         {"model_ms", r.model_ms},
                         {"residual_ms", r.residual_ms()},
                         {"relative_residual", r.relative()}});
  return {{"parameters", parameters},
          {"residuals", residuals},
          {"iterations", fit.iterations},
          {"converged", fit.converged},
          {"rms_relative_residual", fit.rms_relative}};
}

void print_fit(const CalibrationFit& fit) {
  std::fprintf(stderr,
               "fit: %zu models, %d least-squares solve(s)%s, rms relative residual %.2f %%\n",
               fit.residuals.size(), fit.iterations,
               fit.converged ? "" : " (the regimes did NOT settle)", 100.0 * fit.rms_relative);
  for (const CalibrationParameter& p : fit.parameters) {
    if (p.fitted)
      std::fprintf(stderr, "  %-44s %12.6g +- %-10.3g (base %g)%s%s\n", p.name.c_str(), p.value,
                   p.std_error, p.base, p.note.empty() ? "" : "  ", p.note.c_str());
    else
      std::fprintf(stderr, "  %-44s %12.6g kept       %s\n", p.name.c_str(), p.value,
                   p.note.c_str());
  }
  std::fprintf(stderr, "  %-44s %12s %12s %12s\n", "model", "measured ms", "model ms", "residual");
  for (const CalibrationResidual& r : fit.residuals)
    std::fprintf(stderr, "  %-44s %12.4f %12.4f %+11.2f%%\n", r.name.c_str(), r.measured_ms,
                 r.model_ms, 100.0 * r.relative());
}

int run_calibrate(CalibrateOptions o) {
  if (o.cpu_backend.empty()) {
    const std::vector<std::string> names = backend_names();
    o.cpu_backend = std::find(names.begin(), names.end(), "cpu") != names.end() ? "cpu" : "ref";
  }
  const std::string base_text = base_yaml(o.target);
  const Target base = parse_target(base_text, o.target);
  const std::string name = o.name.empty() ? base.name + "-calibrated" : o.name;
  if (!std::regex_match(name, std::regex("[A-Za-z0-9][A-Za-z0-9_.-]*")))
    throw Error("calibrate: --name '" + name + "': use letters, digits, '_', '.' and '-'");
  const fs::path out(o.output);
  std::error_code ec;
  if (fs::is_directory(out, ec))
    throw Error("calibrate: -o '" + o.output + "' is a folder: give the target file to write");
  const std::vector<std::string> backends = backend_names();
  if (std::find(backends.begin(), backends.end(), o.backend) == backends.end())
    make_backend(o.backend);  // not built here: its one-line error names the ones that are
  if (std::find(backends.begin(), backends.end(), o.cpu_backend) == backends.end())
    make_backend(o.cpu_backend);
  const std::vector<fs::path> files = model_files(o.models);

  std::vector<CalibrationSample> samples;
  std::vector<Timed> timed;
  std::vector<Skipped> skipped;
  // `passes` rounds over the models, each loading every model, warming it up and timing its
  // share of the frames: a machine whose speed drifts (other work, its clock, its
  // temperature) drifts under every model alike, not only under the ones that happened to run
  // then. (All models loaded at once would do it frame by frame, but the vart backend's one
  // DPU process restarts with every fragment added.)
  std::vector<Timing> timings;
  auto skip = [&](const fs::path& file, const std::string& reason) {
    skipped.push_back({file.string(), reason});
    if (!o.json) std::fprintf(stderr, "skipped %s: %s\n", file.string().c_str(), reason.c_str());
  };
  for (const fs::path& file : files) {
    Graph graph = read_model(file.string());
    if (is_compiled(graph))
      timings.push_back({file, std::move(graph), {}, false});
    else
      skip(file, "not a compiled xmodel (compile it with vai_c_xir)");
  }
  const int passes = std::min(o.passes, o.frames);
  for (int pass = 0; pass < passes; ++pass) {
    const int frames = o.frames / passes + (pass < o.frames % passes ? 1 : 0);
    for (Timing& t : timings) {
      if (t.failed) continue;
      try {
        Frame frame(t.graph, o);
        for (int i = 0; i < o.warmup; ++i) frame.run();
        for (int i = 0; i < frames; ++i) {
          const auto start = std::chrono::steady_clock::now();
          frame.run();
          t.ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
        }
      } catch (const Error& e) {
        t.failed = true;
        skip(t.file, e.what());
      }
    }
  }
  for (Timing& t : timings) {
    if (t.failed) continue;
    const Timed timed_model = summary(t, o);
    timed.push_back(timed_model);
    samples.push_back({t.file.filename().string(), std::move(t.graph), timed_model.fitted_ms});
    if (!o.json)
      std::fprintf(stderr, "timed %s: %.4f ms a frame (%s of %d; %.4f-%.4f)\n",
                   t.file.string().c_str(), timed_model.fitted_ms, o.statistic.c_str(), o.frames,
                   timed_model.min_ms, timed_model.max_ms);
  }
  if (samples.empty())
    throw Error("calibrate: no model could be timed (" + skipped.front().file + ": " +
                skipped.front().reason + ")");

  const CalibrationFit fit = fit_calibration(samples, base);
  const std::vector<std::string> header = {
      "base target " + o.target + "; timed on " + host_name() + " at " + utc_now() + " through " +
      o.backend + " (CPU subgraphs on the host with " + o.cpu_backend +
      "), one frame at a time, int8 in and out: the " + o.statistic + " of " +
      std::to_string(o.frames) + " frames after " + std::to_string(o.warmup) + " warm-up, in " +
      std::to_string(o.passes) + " pass" + (o.passes == 1 ? "" : "es") + " over the models"};
  std::vector<std::string> lines = header;
  for (const Skipped& s : skipped) lines.push_back("skipped " + s.file + ": " + s.reason);
  write_file_atomically(out, calibrated_target_yaml(base_text, fit, name, lines));

  if (o.json) {
    nlohmann::json models = nlohmann::json::array();
    for (const Timed& t : timed)
      models.push_back({{"file", t.file},
                        {"measured_ms", t.fitted_ms},
                        {"median_ms", t.median_ms},
                        {"min_ms", t.min_ms},
                        {"max_ms", t.max_ms},
                        {"frames", o.frames}});
    nlohmann::json skipped_json = nlohmann::json::array();
    for (const Skipped& s : skipped)
      skipped_json.push_back({{"file", s.file}, {"reason", s.reason}});
    nlohmann::json j = fit_json(fit);
    j["target_file"] = o.output;
    j["name"] = name;
    j["base_target"] = o.target;
    j["backend"] = o.backend;
    j["cpu_backend"] = o.cpu_backend;
    j["statistic"] = o.statistic;
    j["models"] = models;
    j["skipped"] = skipped_json;
    print_json(j);
  } else {
    print_fit(fit);
    std::fprintf(stderr, "wrote %s (target '%s')\n", o.output.c_str(), name.c_str());
  }
  return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CalibrateOptions& o = *options;
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "On a board: time compiled models through the runtime and fit a target YAML to them");
  sub->add_option("models", o.models,
                  "Compiled xmodels, or folders of them (their *.xmodel files): the compiled "
                  "micro-models and a few whole models")
      ->required();
  sub->add_option("-o,--output", o.output, "The calibrated target YAML to write")->required();
  sub->add_option("--target", o.target,
                  "The base target: a built-in name (kv260, zcu102, zcu104) or a target YAML")
      ->capture_default_str();
  sub->add_option("--name", o.name, "The calibrated target's name (default: <base>-calibrated)");
  sub->add_option("--backend", o.backend, "The backend that runs the compiled models")
      ->capture_default_str();
  sub->add_option("--cpu-backend", o.cpu_backend,
                  "The host backend that runs a model's CPU ops after its DPU subgraph (the A53 "
                  "path; default: cpu where built, else ref)");
  sub->add_option("--frames", o.frames, "Timed frames per model (the median is fitted)")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  sub->add_option("--passes", o.passes,
                  "Rounds over the models, each loading every model and timing its share of the "
                  "frames (the warm-up in each): a machine whose speed drifts drifts under "
                  "every model alike")
      ->check(CLI::Range(1, 1'000))
      ->capture_default_str();
  sub->add_option("--warmup", o.warmup, "Untimed frames per model first (in each pass)")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  sub->add_option("--statistic", o.statistic,
                  "Each model's time: the median of its frames, or the minimum (on a machine "
                  "busy with other work, where delays only add)")
      ->check(CLI::IsMember({"median", "min"}))
      ->capture_default_str();
  sub->add_flag("--json", o.json, "Print one JSON object on stdout");
  return {sub, [options] { return run_calibrate(*options); }};
}

}  // namespace dpushard::cli
