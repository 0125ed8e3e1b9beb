// dpushard predict FILE.xmodel: the modeled time of one frame on a DPU target (KV260 B4096
// by default): DPU time, fps, per-op cycles and bound, the ops left on the CPU with their
// Cortex-A53 cost, and the DPU's share. Works on `_int` models, fragments and compiled files;
// given a plan (its folder or plan.yaml), the DPU utilization of each fragment and the whole.

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "read_model.hpp"

namespace dpushard::cli {
namespace {

struct PredictArgs {
  std::string file;
  std::string target = "kv260";
  std::string target_file;
  bool json = false;
  double calibrate_fps = 0;
  double boundary_slowdown = 0;
  std::string io = "local";
  int top = 0;
};

// The compiler's own op count (2 x MACs + bias adds) when the file is compiled.
std::optional<std::int64_t> compiler_workload(const Graph& graph) {
  if (!graph.root()) return std::nullopt;
  std::int64_t total = 0;
  bool found = false;
  for (const auto& child : graph.root()->children) {
    if (child.device() != "DPU") continue;
    const std::int64_t w = int_attr(child.attrs, "workload", -1);
    if (w >= 0) {
      total += w;
      found = true;
    }
  }
  return found ? std::optional(total) : std::nullopt;
}

// The DPU's busy share of the frame period of a dpushard worker streaming frames back to
// back, one at a time (worker_ms): what a profiler's "DPU utilization" over a run reads.
double busy_share(const Prediction& p) { return p.worker_ms > 0 ? p.dpu_ms / p.worker_ms : 0.0; }

nlohmann::json op_json(const OpTiming& t) {
  nlohmann::json j = {{"op", t.op},
                      {"type", t.type},
                      {"engine", device_name(t.engine)},
                      {"bound", bound_name(t.bound)},
                      {"ms", t.ms},
                      {"macs", t.macs},
                      {"bytes", t.bytes}};
  if (t.engine == Device::Dpu) {
    j["cycles"] = t.cycles;
    j["padded_macs"] = t.padded_macs;
    j["compute_ms"] = t.compute_ms;
    j["memory_ms"] = t.memory_ms;
  } else {
    j["cpu_reason"] = t.cpu_reason;
  }
  return j;
}

nlohmann::json blocks_json(const Prediction& p) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const BlockTiming& b : time_per_block(p))
    blocks.push_back(
        {{"block", b.block}, {"ops", b.ops}, {"dpu_ms", b.dpu_ms}, {"cpu_ms", b.cpu_ms}});
  return blocks;
}

nlohmann::json prediction_json(const PredictArgs& a, const Graph& graph, const Target& target,
                               const Prediction& p) {
  nlohmann::json ops = nlohmann::json::array();
  nlohmann::json cpu_ops = nlohmann::json::array();
  for (const auto& t : p.ops) {
    ops.push_back(op_json(t));
    if (t.engine == Device::Cpu)
      cpu_ops.push_back({{"op", t.op}, {"type", t.type}, {"ms", t.ms}, {"reason", t.cpu_reason}});
  }
  // DPU utilization (docs/perf.md): the share of the ops' MACs placed on the DPU, the share
  // of one frame's time spent there, and the DPU's busy share of a worker's frame period.
  const DpuUse use = dpu_use(p);
  const double mac_share = use.mac_share();
  const double time_share = use.time_share();
  nlohmann::json j = {{"file", a.file},
                      {"target", target.name},
                      {"arch", target.arch},
                      {"compiled", is_compiled(graph)},
                      {"io", a.io},
                      {"dpu_cores", p.dpu_cores},
                      {"fps", p.fps},
                      {"frame_ms", p.frame_ms},
                      {"latency_ms", p.latency_ms},
                      {"fps_one_thread", p.latency_ms > 0 ? 1000.0 / p.latency_ms : 0.0},
                      {"worker_ms", p.worker_ms},
                      {"dpu_ms", p.dpu_ms},
                      {"cpu_ms", p.cpu_ms},
                      {"host_ms", p.host_ms},
                      {"net_ms", p.net_ms},
                      {"input_bytes", p.input_bytes},
                      {"output_bytes", p.output_bytes},
                      {"dpu_share", p.dpu_share},
                      {"dpu_mac_share", mac_share},
                      {"dpu_time_share", time_share},
                      {"dpu_busy_share", busy_share(p)},
                      {"dpu_subgraphs", p.dpu_subgraphs},
                      {"cpu_subgraphs", p.cpu_subgraphs},
                      {"macs", p.macs},
                      {"dpu_cycles", p.dpu_cycles},
                      {"ddr_bytes", p.ddr_bytes},
                      {"compute_efficiency", target.compute_efficiency},
                      {"blocks", blocks_json(p)},
                      {"ops", ops},
                      {"cpu_ops", cpu_ops}};
  if (const auto w = compiler_workload(graph)) j["compiler_workload"] = *w;
  return j;
}

// DPU and CPU time per block: where a model's A53 work sits.
void print_blocks(std::FILE* out, const Prediction& p) {
  const std::vector<BlockTiming> blocks = time_per_block(p);
  if (blocks.size() < 2) return;
  std::fprintf(out, "\n  %-32s %5s %10s %10s %7s\n", "block", "ops", "DPU ms", "CPU ms", "DPU %");
  for (const BlockTiming& b : blocks) {
    const double total = b.dpu_ms + b.cpu_ms;
    std::fprintf(out, "  %-32s %5d %10.3f %10.3f %6.1f%%\n", b.block.c_str(), b.ops, b.dpu_ms,
                 b.cpu_ms, total > 0 ? 100.0 * b.dpu_ms / total : 0.0);
  }
  double in_blocks = 0;
  for (const BlockTiming& b : blocks) in_blocks += b.dpu_ms + b.cpu_ms;
  std::fprintf(out, "  %-32s %5d %10.3f ms in all (DPU and CPU)\n", "subgraph launches",
               p.dpu_subgraphs + p.cpu_subgraphs, p.dpu_ms + p.cpu_ms - in_blocks);
}

void print_human(const PredictArgs& a, const Graph& graph, const Target& target,
                 const Prediction& p) {
  std::FILE* out = stderr;
  std::fprintf(out, "%s on %s (%s)%s\n", a.file.c_str(), target.name.c_str(), target.arch.c_str(),
               is_compiled(graph) ? ", compiled" : "");
  std::fprintf(out,
               "  one frame: %.3f ms = DPU %.3f ms + CPU %.3f ms + host %.3f ms + TCP %.3f ms  "
               "->  %.2f fps (one thread)\n",
               p.latency_ms, p.dpu_ms, p.cpu_ms, p.host_ms, p.net_ms,
               p.latency_ms > 0 ? 1000.0 / p.latency_ms : 0.0);
  std::fprintf(out, "  several threads: %.3f ms per frame on %d DPU core%s  ->  %.2f fps\n",
               p.frame_ms, p.dpu_cores, p.dpu_cores == 1 ? "" : "s", p.fps);
  std::fprintf(out, "  as a dpushard worker (one frame at a time): %.3f ms per frame (%s io)\n",
               p.worker_ms, a.io.c_str());
  std::fprintf(out, "  DPU share %.1f %%, %d DPU / %d CPU subgraphs, %s MACs, %s DDR bytes\n",
               100.0 * p.dpu_share, p.dpu_subgraphs, p.cpu_subgraphs, human_count(p.macs).c_str(),
               human_count(p.ddr_bytes).c_str());
  const DpuUse use = dpu_use(p);
  std::fprintf(out,
               "  DPU utilization: %.1f %% of the MACs, %.1f %% of one frame's time, busy %.1f "
               "%% of a worker's frame period\n",
               100.0 * use.mac_share(), 100.0 * use.time_share(), 100.0 * busy_share(p));
  if (const auto w = compiler_workload(graph))
    std::fprintf(out, "  compiler workload %s ops (model: 2 x MACs = %s)\n",
                 human_count(*w).c_str(), human_count(2 * p.macs).c_str());

  print_blocks(out, p);
  std::fprintf(out, "\n  %-44s %-18s %-4s %12s %10s %-8s\n", "op", "type", "on", "cycles", "ms",
               "bound");
  int shown = 0;
  for (const auto& t : p.ops) {
    if (a.top > 0 && shown++ >= a.top) break;
    std::string name = t.op.size() > 44 ? "..." + t.op.substr(t.op.size() - 41) : t.op;
    std::fprintf(out, "  %-44s %-18s %-4s %12lld %10.4f %-8s\n", name.c_str(), t.type.c_str(),
                 std::string(device_name(t.engine)).c_str(), static_cast<long long>(t.cycles), t.ms,
                 std::string(bound_name(t.bound)).c_str());
  }
  bool header = false;
  for (const auto& t : p.ops) {
    if (t.engine != Device::Cpu) continue;
    if (!header) std::fprintf(out, "\n  on the CPU (%s):\n", target.cpu_name.c_str());
    header = true;
    std::fprintf(out, "  %-44s %10.4f ms  %s\n", t.op.c_str(), t.ms, t.cpu_reason.c_str());
  }
}

bool is_plan(const std::string& path) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return std::filesystem::exists(p / "plan.yaml", ec);
  return p.extension() == ".yaml" || p.extension() == ".yml";
}

// Each fragment of a plan as its worker runs it (network io), and the whole model: every
// fragment once (a replicated one runs each frame on one of its nodes).
int run_predict_plan(const PredictArgs& a, const Target& target) {
  const std::filesystem::path path(a.file);
  const Plan plan = read_plan(path);
  const std::filesystem::path dir = std::filesystem::is_directory(path) ? path : path.parent_path();
  PredictOptions options;
  if (a.boundary_slowdown > 0) options.boundary_slowdown = a.boundary_slowdown;
  options.io = HostIo::Network;
  nlohmann::json fragments = nlohmann::json::array();
  DpuUse whole;
  if (!a.json)
    std::fprintf(stderr, "%s (%s on %d node%s) on %s, each fragment as a worker runs it\n",
                 a.file.c_str(), plan.strategy.c_str(), plan.nodes, plan.nodes == 1 ? "" : "s",
                 target.name.c_str());
  if (!a.json)
    std::fprintf(stderr, "  %-20s %-10s %12s %12s %12s %10s %10s %8s\n", "fragment", "nodes",
                 "MACs on DPU", "time on DPU", "DPU busy", "DPU ms", "frame ms", "worker");
  for (const auto& f : plan.fragments) {
    const Prediction p = predict(read_model((dir / f.file).string()), target, options);
    const DpuUse use = dpu_use(p);
    whole += use;
    std::string nodes;
    for (int n : f.nodes) nodes += (nodes.empty() ? "" : ",") + std::to_string(n);
    fragments.push_back({{"name", f.name},
                         {"file", f.file},
                         {"nodes", f.nodes},
                         {"macs", use.macs},
                         {"dpu_macs", use.dpu_macs},
                         {"dpu_ms", use.dpu_ms},
                         {"latency_ms", use.frame_ms},
                         {"worker_ms", p.worker_ms},
                         {"dpu_mac_share", use.mac_share()},
                         {"dpu_time_share", use.time_share()},
                         {"dpu_busy_share", busy_share(p)}});
    if (!a.json)
      std::fprintf(stderr, "  %-20s %-10s %11.1f%% %11.1f%% %11.1f%% %10.3f %10.3f %8.3f\n",
                   f.name.c_str(), nodes.c_str(), 100.0 * use.mac_share(), 100.0 * use.time_share(),
                   100.0 * busy_share(p), use.dpu_ms, use.frame_ms, p.worker_ms);
  }
  if (a.json) {
    print_json({{"plan", a.file},
                {"target", target.name},
                {"strategy", plan.strategy},
                {"nodes", plan.nodes},
                {"fragments", fragments},
                {"macs", whole.macs},
                {"dpu_macs", whole.dpu_macs},
                {"dpu_ms", whole.dpu_ms},
                {"latency_ms", whole.frame_ms},
                {"dpu_mac_share", whole.mac_share()},
                {"dpu_time_share", whole.time_share()}});
  } else {
    std::fprintf(stderr, "  %-20s %-10s %11.1f%% %11.1f%% %12s %10.3f %10.3f\n", "whole model", "",
                 100.0 * whole.mac_share(), 100.0 * whole.time_share(), "", whole.dpu_ms,
                 whole.frame_ms);
    std::fprintf(stderr,
                 "  (MACs on DPU: the ops' MACs placed there; time on DPU: DPU ms / one frame's "
                 "ms alone; DPU busy: DPU ms / the worker's ms per frame streaming; "
                 "docs/perf.md \"DPU utilization\")\n");
  }
  return 0;
}

int run_predict(const PredictArgs& a) {
  const Target target =
      a.target_file.empty() ? resolve_target(a.target) : load_target(a.target_file);
  if (a.calibrate_fps <= 0 && is_plan(a.file)) return run_predict_plan(a, target);
  const Graph graph = read_model(a.file);
  if (a.calibrate_fps > 0) {
    const double eff = calibrate_compute_efficiency(graph, target, a.calibrate_fps);
    if (a.json)
      print_json({{"file", a.file},
                  {"target", target.name},
                  {"fps", a.calibrate_fps},
                  {"compute_efficiency", eff}});
    else
      std::fprintf(stderr, "dpu.compute_efficiency = %.4f makes %s run at %.2f fps on %s\n", eff,
                   a.file.c_str(), a.calibrate_fps, target.name.c_str());
    return 0;
  }
  PredictOptions options;
  if (a.boundary_slowdown > 0) options.boundary_slowdown = a.boundary_slowdown;
  options.io = a.io == "network" ? HostIo::Network : HostIo::Local;
  const Prediction p = predict(graph, target, options);
  if (a.json)
    print_json(prediction_json(a, graph, target, p));
  else
    print_human(a, graph, target, p);
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = app.add_subcommand(
      "predict", "Modeled time per frame of a model or fragment on a DPU target");
  sub->add_option("file", args->file,
                  "An _int, fragment or compiled xmodel, or a plan (its folder or plan.yaml): "
                  "then each fragment's DPU utilization and the whole model's")
      ->required();
  sub->add_option("--target", args->target,
                  "A built-in target (kv260, zcu102, zcu104) or a target YAML file")
      ->capture_default_str();
  sub->add_option("--target-file", args->target_file, "A target YAML file (see targets/)");
  sub->add_flag("--json", args->json, "Print one JSON object on stdout");
  sub->add_option("--top", args->top, "Show only the first N ops in the human table")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--boundary-slowdown", args->boundary_slowdown,
                  "Override the target's CPU slowdown of trailing convs of fix-less outputs")
      ->check(CLI::Range(1.0, 1e6));
  sub->add_option("--io", args->io,
                  "local: float in and out in the process (Model Zoo runs); network: int8 "
                  "tensors over TCP, as a dpushard worker (and the planner) runs a fragment")
      ->check(CLI::IsMember({"local", "network"}))
      ->capture_default_str();
  sub->add_option("--calibrate-fps", args->calibrate_fps,
                  "Instead of predicting, print the dpu.compute_efficiency that makes this model "
                  "run at FPS (the calibration procedure, docs/perf.md)")
      ->check(CLI::PositiveNumber);
  return {sub, [args] { return run_predict(*args); }};
}

}  // namespace dpushard::cli
