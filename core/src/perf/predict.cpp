// One frame on the target: each op placed on the DPU or the CPU, timed, then summed with
// the subgraph launches. The model is described in docs/perf.md.

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "boundary.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/perf/perf.hpp"
#include "op_shape.hpp"
#include "subgraphs.hpp"

namespace dpushard {
namespace {

using perf::OpKind;
using perf::OpShape;
using perf::Where;

constexpr double kUsPerMs = 1000.0;

OpTiming base_timing(const Op& op, const OpShape& s) {
  OpTiming t;
  t.op = op.name;
  t.type = op.type;
  t.macs = s.macs != 0 ? s.macs : s.element_ops;
  t.bytes = s.weight_bytes + s.input_bytes + s.output_bytes + s.intermediate_bytes;
  return t;
}

// Compute and memory time on the DPU; ms = the larger of the two, or the op's latency floor
// when a tiny op takes less than that (docs/perf.md "Small depthwise ...").
void time_on_dpu(const OpShape& s, const Target& target, OpTiming& t) {
  t.engine = Device::Dpu;
  t.cycles = perf::dpu_cycles(s, target);
  t.padded_macs = perf::padded_work(s, target);
  const double cycles_per_ms = target.clock_mhz * 1e3 * target.compute_efficiency;
  const double bytes_per_ms = target.ddr_bandwidth_gbps * 1e6 * target.ddr_efficiency;
  t.compute_ms = static_cast<double>(t.cycles) / cycles_per_ms;
  t.memory_ms = static_cast<double>(t.bytes) / bytes_per_ms;
  t.bound = t.compute_ms >= t.memory_ms ? Bound::Compute : Bound::Memory;
  // One tile through the pipeline in sequence, at the DPU clock: hidden behind a layer of many
  // tiles, the whole time of a tiny one.
  t.alu = s.kind != OpKind::Conv;
  const double min_cycles = t.alu ? target.alu_min_op_cycles : target.min_op_cycles;
  const double busy_ms = std::max(t.compute_ms, t.memory_ms);
  t.ms = std::max(busy_ms, min_cycles / (target.clock_mhz * 1e3));
  t.floor_ms = t.ms - busy_ms;
}

// Float operations at the CPU fallback's rate.
void time_on_cpu(const OpShape& s, const Target& target, std::string reason, OpTiming& t) {
  t.engine = Device::Cpu;
  t.cpu_reason = reason.empty() ? "placed on the CPU" : std::move(reason);
  t.compute_ms = s.cpu_flops / (perf::cpu_gflops(target, s.cpu_class) * 1e6);
  t.cpu_rate = perf::cpu_class_key(s.cpu_class);
  t.cpu_flops = s.cpu_flops;
  t.memory_ms = 0;
  t.ms = t.compute_ms;
  t.bound = Bound::Cpu;
}

// The trailing conv of a fix-less output: its DPU time x the observed slowdown.
void time_as_boundary(const OpShape& s, const Target& target, double slowdown, OpTiming& t) {
  time_on_dpu(s, target, t);
  t.engine = Device::Cpu;
  t.cpu_reason =
      "output not produced by a fix op: the compiler moves the trailing conv to the "
      "CPU (~" +
      std::to_string(std::lround(slowdown)) + "x slower)";
  t.ms *= slowdown;  // the DPU time, its floor included
  t.floor_ms = 0;
  t.compute_ms = t.ms;
  t.memory_ms = 0;
  t.bound = Bound::Cpu;
}

// The compiler's placement in a compiled file: the op's `device` attribute.
std::optional<Device> compiled_engine(const Op& op) {
  const std::string device = string_attr(op.attrs, "device", "");
  if (device == "DPU") return Device::Dpu;
  if (device == "CPU") return Device::Cpu;
  return std::nullopt;
}

std::int64_t tensor_bytes(const std::vector<const Op*>& ops) {
  std::int64_t bytes = 0;
  for (const Op* op : ops) bytes += op->output.element_count();
  return bytes;
}

// The A53's work per frame outside the DPU and the CPU ops (docs/perf.md "The host side"):
// the fixed cost, the copies into and out of the DPU's buffers, and either the float
// conversions at the edges (local io) or the TCP stack's time (network io, into net_ms).
void add_host_time(const Target& t, HostIo io, Prediction& p) {
  constexpr double kNsPerMs = 1e6;
  const auto in = static_cast<double>(p.input_bytes);
  const auto out = static_cast<double>(p.output_bytes);
  p.host_ms = t.per_frame_us / kUsPerMs +
              (in * t.copy_in_ns_per_byte + out * t.copy_out_ns_per_byte) / kNsPerMs;
  if (io == HostIo::Local)
    p.host_ms += (in + out) * t.requantize_ns_per_element / kNsPerMs;
  else
    p.net_ms = (in * t.tcp_recv_ns_per_byte + out * t.tcp_send_ns_per_byte) / kNsPerMs;
}

bool is_mac_op(const OpShape& s) {
  return s.kind == OpKind::Conv || s.kind == OpKind::Depthwise ||
         (s.kind == OpKind::FloatOp && s.macs != 0);
}

}  // namespace

std::optional<OpTiming> time_op(const Graph& graph, const Op& op, const Target& target,
                                std::optional<Device> engine) {
  if (perf::is_weight(graph, op.name)) return std::nullopt;
  const OpShape s = perf::describe_op(graph, op, target);
  if (s.kind == OpKind::Free) return std::nullopt;
  OpTiming t = base_timing(op, s);
  std::string reason = perf::limit_violation(s, target);
  if (s.kind == OpKind::FloatOp && reason.empty()) reason = "no DPU engine for it";
  if (engine.value_or(Device::Dpu) == Device::Dpu && reason.empty())
    time_on_dpu(s, target, t);
  else
    time_on_cpu(s, target, reason, t);
  return t;
}

Prediction predict(const Graph& graph, const Target& target, const PredictOptions& options) {
  const bool compiled = is_compiled(graph);
  const double slowdown = options.boundary_slowdown.value_or(target.boundary_slowdown);
  if (!(slowdown >= 1.0)) throw Error("predict: boundary slowdown must be >= 1");
  const std::set<std::string> trailing =
      compiled ? std::set<std::string>{} : perf::trailing_unfixed_convs(graph);
  const std::set<std::string> trailing_ops =
      compiled ? std::set<std::string>{} : perf::trailing_unfixed_ops(graph);

  Prediction p;
  p.target = target.name;
  std::vector<Where> where(graph.size(), Where::Free);
  for (std::size_t i = 0; i < graph.size(); ++i)
    if (perf::is_weight(graph, graph.ops()[i].name)) where[i] = Where::Weight;

  for (std::size_t i : graph.topological_order()) {
    if (where[i] == Where::Weight) continue;
    const Op& op = graph.ops()[i];
    OpShape s = perf::describe_op(graph, op, target);
    if (s.kind == OpKind::Free) continue;
    OpTiming t = base_timing(op, s);

    std::string reason = perf::limit_violation(s, target);
    if (compiled) {
      // A compiled file says where the compiler put each op; follow it.
      const auto placed = compiled_engine(op);
      if (placed == Device::Dpu) {
        reason.clear();
        if (s.kind == OpKind::FloatOp) {  // a DPU engine this model does not know: misc
          s.kind = OpKind::Eltwise;
          s.operands = 1;
        }
      } else if (placed == Device::Cpu && reason.empty()) {
        reason = "placed on the CPU by the compiler";
      }
    }
    if (s.kind == OpKind::FloatOp && reason.empty()) reason = "no DPU engine for it";

    if (!reason.empty())
      time_on_cpu(s, target, reason, t);
    else if (trailing.count(op.name) != 0)
      time_as_boundary(s, target, slowdown, t);
    else if (trailing_ops.count(op.name) != 0)
      time_on_cpu(s, target,
                  "output not produced by a fix op: the compiler leaves the ops after the last "
                  "fix on the CPU",
                  t);
    else
      time_on_dpu(s, target, t);

    if (t.engine == Device::Dpu) {
      p.dpu_cycles += t.cycles;
      p.ddr_bytes += t.bytes;
      p.dpu_ms += t.ms;
      where[i] = Where::Dpu;
    } else {
      p.cpu_ms += t.ms;
      where[i] = Where::Cpu;
    }
    if (is_mac_op(s)) p.macs += s.macs;
    p.ops.push_back(std::move(t));
  }

  const perf::SubgraphCount count =
      compiled ? perf::count_compiled_subgraphs(graph, where) : perf::count_subgraphs(graph, where);
  p.dpu_subgraphs = count.dpu;
  p.cpu_subgraphs = count.cpu;
  p.dpu_ms += count.dpu * target.per_subgraph_us / kUsPerMs;
  p.cpu_ms += count.cpu * target.per_subgraph_us / kUsPerMs;
  p.dpu_cores = static_cast<int>(target.dpu_cores);
  p.input_bytes = tensor_bytes(graph.inputs());
  p.output_bytes = tensor_bytes(graph.outputs());
  add_host_time(target, options.io, p);

  const double a53_ms = p.cpu_ms + p.host_ms;
  p.latency_ms = p.dpu_ms + a53_ms + p.net_ms;
  const double ddr_ms =
      static_cast<double>(p.ddr_bytes) / (target.ddr_bandwidth_gbps * 1e6 * target.ddr_efficiency);
  p.frame_ms = std::max({p.dpu_ms / static_cast<double>(target.dpu_cores), ddr_ms,
                         a53_ms / static_cast<double>(target.host_cores), p.net_ms});
  p.fps = p.frame_ms > 0 ? 1000.0 / p.frame_ms : 0.0;
  p.worker_ms = std::max(p.dpu_ms + a53_ms, p.net_ms);
  const double engine_ms = p.dpu_ms + p.cpu_ms;
  p.dpu_share = engine_ms > 0 ? p.dpu_ms / engine_ms : 0.0;
  return p;
}

double predict_fragment_ms(const Graph& fragment, const Target& target,
                           const PredictOptions& options) {
  PredictOptions worker = options;
  worker.io = HostIo::Network;
  return predict(fragment, target, worker).worker_ms;
}

double calibrate_compute_efficiency(const Graph& graph, const Target& target, double fps) {
  if (!(fps > 0)) throw Error("calibrate: fps must be > 0");
  Target t = target;
  const auto fps_at = [&](double efficiency) {
    t.compute_efficiency = efficiency;
    return predict(graph, t).fps;
  };
  double lo = 1e-4, hi = 1.0;
  const double best = fps_at(hi);
  if (best < fps)
    throw Error("calibrate: " + std::to_string(fps) +
                " fps is out of reach even at efficiency 1 (" + std::to_string(best) +
                " fps): memory or overheads bound the model");
  if (fps_at(lo) > fps)
    throw Error("calibrate: " + std::to_string(fps) + " fps is below the model's range");
  // fps grows with the efficiency: bisect.
  for (int i = 0; i < 100 && hi - lo > 1e-9; ++i) {
    const double mid = 0.5 * (lo + hi);
    (fps_at(mid) < fps ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

DpuUse dpu_use(const Prediction& prediction) {
  DpuUse use;
  for (const auto& t : prediction.ops) {
    use.macs += static_cast<double>(t.macs);
    if (t.engine == Device::Dpu) use.dpu_macs += static_cast<double>(t.macs);
  }
  use.dpu_ms = prediction.dpu_ms;
  use.frame_ms = prediction.latency_ms;
  return use;
}

}  // namespace dpushard
