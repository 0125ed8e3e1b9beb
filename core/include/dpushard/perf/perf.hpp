#pragma once
// The timing model of a DPU target (KV260's DPUCZDX8G B4096 shipped): per-op cycles from
// the engine's parallelism with channel and pixel padding, DDR traffic, the ops the
// compiler would leave on the CPU with their Cortex-A53 cost, subgraph and frame
// overheads. Used by `dpushard predict`, the `sim` backend and the planner's cost model.
// The model and its calibration are described in docs/perf.md.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/perf/device.hpp"

namespace dpushard {

// A target is data: a YAML file (targets/kv260_b4096.yaml) whose fields map one to one
// onto this struct. Every field is required; see docs/perf.md for what each one means.
struct Target {
  std::string name;  // "kv260"
  std::string arch;  // "DPUCZDX8G_ISA1_B4096"

  // DPU engine. `dpu_cores` cores serve that many frames at once; one frame uses one core.
  std::int64_t dpu_cores = 1;
  double clock_mhz = 0;
  std::int64_t pixel_parallelism = 0;           // output pixels along the width per cycle
  std::int64_t input_channel_parallelism = 0;   // ICP
  std::int64_t output_channel_parallelism = 0;  // OCP
  // The ALU engine (depthwise conv, pooling, eltwise): output pixels per cycle, with ICP
  // channels each (PG338: depthwise parallelism is half the pixel parallelism).
  std::int64_t alu_pixel_parallelism = 0;
  bool channel_augmentation = false;  // narrow inputs pack kw*ic into the ICP lanes
  double compute_efficiency = 0;      // achieved fraction of padded peak (calibrated)
  // The fewest DPU cycles an op takes, on the conv engine (conv, matmul) and on the ALU
  // (depthwise, pooling, eltwise): one tile's instruction fetch, load, compute and save in
  // sequence, which a layer of many tiles overlaps and a tiny layer cannot (docs/perf.md).
  double min_op_cycles = 0;
  double alu_min_op_cycles = 0;

  // DDR, shared by all DPU cores.
  double ddr_bandwidth_gbps = 0;  // theoretical, GB/s (1e9 bytes)
  double ddr_efficiency = 0;      // achievable fraction
  // Bytes of DDR the board gives models (memory.model_mib): weights, instruction code and
  // the feature maps of the frames in flight must fit (split::fragment_memory).
  std::int64_t model_memory_bytes = 0;

  // Overheads.
  double per_subgraph_us = 0;  // each DPU or CPU subgraph launch of a frame

  // The host side (Cortex-A53) of one frame outside the DPU: target `host:` section.
  std::int64_t host_cores = 1;           // A53 cores that can work on frames at once
  double per_frame_us = 0;               // fixed cost per frame (runner call, wait, hand-offs)
  double copy_in_ns_per_byte = 0;        // input tensor into the DPU's buffer, cache clean
  double copy_out_ns_per_byte = 0;       // output tensor out of the DPU's buffer, invalidate
  double requantize_ns_per_element = 0;  // float <-> int8 at a float edge of the frame
  double tcp_recv_ns_per_byte = 0;       // CPU time of receiving over TCP
  double tcp_send_ns_per_byte = 0;       // CPU time of sending over TCP

  // CPU fallback (Cortex-A53): float throughput of one core per op class, GFLOP/s.
  std::string cpu_name;
  double cpu_gemm_gflops = 0;            // conv, matmul, inner-product
  double cpu_depthwise_gflops = 0;       // depthwise conv
  double cpu_elementwise_gflops = 0;     // eltwise, pooling, piecewise-linear activations
  double cpu_transcendental_gflops = 0;  // softmax, sigmoid, tanh, gelu (exp/erf)
  double cpu_normalization_gflops = 0;   // layernorm
  double boundary_slowdown = 0;          // trailing convs moved to the CPU by a fix-less output

  // DPU limits, derived from the DPU's op rules (dpushard/perf/dpu_rules.hpp, the shipped
  // targets/dpu/dpuczdx8g.yaml), not read from the target file; ops beyond them run on the CPU.
  std::int64_t kernel_min = 0, kernel_max = 0;
  std::int64_t stride_min = 0, stride_max = 0;
  std::int64_t max_kernel_icgroups = 0;  // kw * kh * ceil(ic / ICP)
  std::int64_t max_output_channels = 0;
  double leaky_alpha = 0;            // the only LeakyReLU slope the DPU runs
  std::vector<std::string> cpu_ops;  // op types that always run on the CPU

  std::int64_t peak_macs_per_cycle() const {
    return pixel_parallelism * input_channel_parallelism * output_channel_parallelism;
  }
};

// Parses a target YAML document with the one YAML reader: errors are one line,
// "kv260.yaml:8:1: dpu.clock_mhz: missing" (dpushard/yaml/yaml_reader.hpp).
Target parse_target(std::string_view yaml_text, const std::string& origin);
Target load_target(const std::filesystem::path& path);
// Targets compiled into the binary ("kv260"), so no source tree is needed at run time.
std::vector<std::string> builtin_target_names();
std::string_view builtin_target_yaml(std::string_view name);  // throws listing the names
Target builtin_target(std::string_view name);
// A built-in name or, when it names an existing file, that YAML file.
Target resolve_target(std::string_view name_or_file);

enum class Bound { Compute, Memory, Cpu };

std::string_view bound_name(Bound b);  // "compute", "memory", "cpu"

// One op that costs time. Ops that cost nothing on their own (fix, data, const, layout
// ops, nonlinears fused into their producer) do not appear.
struct OpTiming {
  std::string op;
  std::string type;
  Device engine = Device::Dpu;   // where the op runs
  std::string cpu_reason;        // why the compiler would put it on the CPU
  std::int64_t macs = 0;         // useful multiply-accumulates (or element ops)
  std::int64_t padded_macs = 0;  // MAC slots the engine spends, padding included
  std::int64_t cycles = 0;       // DPU cycles at full efficiency (compute side)
  std::int64_t bytes = 0;        // DDR traffic: weights + input + output feature maps
  double compute_ms = 0;         // cycles / (clock * efficiency), or the CPU time
  double memory_ms = 0;          // bytes / effective DDR bandwidth
  double floor_ms = 0;           // what the op's latency floor (min_op_cycles) adds on the DPU
  bool alu = false;              // on the DPU: the ALU (alu_min_op_cycles), else the conv engine
  double ms = 0;                 // max(compute, memory, floor) on the DPU; the CPU time otherwise
  Bound bound = Bound::Compute;
  // On the CPU at a fallback rate: that rate's key in the target's cpu.fallback_gflops
  // ("gemm", "depthwise", "elementwise", "transcendental", "normalization") and the op's
  // float operations (ms = cpu_flops / that rate). Empty and 0 otherwise (on the DPU, or a
  // trailing conv priced at its DPU time x boundary_slowdown).
  std::string_view cpu_rate;
  double cpu_flops = 0;
};

struct Prediction {
  std::string target;
  int dpu_cores = 1;
  std::vector<OpTiming> ops;  // in execution order
  int dpu_subgraphs = 0;
  int cpu_subgraphs = 0;
  std::int64_t macs = 0;          // all useful MACs (DPU and CPU)
  std::int64_t dpu_cycles = 0;    // compute cycles of the DPU ops
  std::int64_t ddr_bytes = 0;     // DDR traffic of the DPU ops per frame
  std::int64_t input_bytes = 0;   // the frame's input tensors (int8)
  std::int64_t output_bytes = 0;  // the frame's output tensors (int8)
  double dpu_ms = 0;              // DPU ops + DPU subgraph overheads, on one DPU core
  double cpu_ms = 0;              // CPU ops + CPU subgraph overheads (A53)
  double host_ms = 0;             // host work: fixed + copies (+ requantize at float edges)
  double net_ms = 0;              // A53 time of receiving and sending over TCP (network io)
  double latency_ms = 0;          // dpu + cpu + host (+ net): one frame alone
  // Steady state with several frames in flight (several threads): the busiest of the DPU
  // cores (dpu / cores), DDR shared by the cores, the A53 cores ((cpu + host) / host_cores)
  // and the one network thread (net).
  double frame_ms = 0;
  double fps = 0;  // 1000 / frame_ms
  // A dpushard worker runs one frame of a fragment at a time while its io thread moves the
  // next: max(dpu + cpu + host, net). The planner's cost per fragment.
  double worker_ms = 0;
  double dpu_share = 0;  // dpu_ms / (dpu_ms + cpu_ms)
};

// Where a frame's tensors come from and go to.
enum class HostIo {
  Local,    // float in and out in the same process (Model Zoo runs): requantize, no TCP
  Network,  // int8 tensors over TCP (a dpushard worker): TCP receive/send, no requantize
};

struct PredictOptions {
  // Overrides the target's boundary_slowdown (the split oracle may carry its own factor).
  std::optional<double> boundary_slowdown;
  HostIo io = HostIo::Local;
};

// Predicts one frame of an `_int` graph, a fragment of one, or a compiled xmodel (its
// `*-fix` ops and subgraph placement). Throws dpushard::Error naming an op whose shapes
// cannot be read.
Prediction predict(const Graph& graph, const Target& target, const PredictOptions& options = {});

// The planner's cost model: modeled time per frame of `fragment` on a `target` worker, in
// ms (worker_ms with network io: tensors over TCP, one frame at a time).
double predict_fragment_ms(const Graph& fragment, const Target& target,
                           const PredictOptions& options = {});

// Time of one op alone, for cost models that place ops themselves (the planner). With no
// `engine`, the op goes where the target's limits put it; otherwise where asked (an op
// the DPU cannot run is priced on the CPU all the same, with its cpu_reason). nullopt for
// ops that cost nothing (fix, layout, fused nonlinears, weights). Subgraph and frame
// overheads are not included. A CPU op is priced at its class's float rate; the
// boundary penalty is a fragment-level rule applied by predict().
std::optional<OpTiming> time_op(const Graph& graph, const Op& op, const Target& target,
                                std::optional<Device> engine = std::nullopt);

// DPU utilization of one frame (docs/perf.md "DPU utilization"), two ways: the share of the
// ops' work placed on the DPU (MACs; element ops for ops without MACs, as OpTiming counts
// them) and the share of one frame's time spent there (dpu_ms over latency_ms: DPU, CPU,
// host and, with network io, TCP time). Sums over fragments add up to the whole model's.
struct DpuUse {
  double macs = 0;      // every timed op's work
  double dpu_macs = 0;  // that of the ops on the DPU
  double dpu_ms = 0;    // Prediction::dpu_ms
  double frame_ms = 0;  // Prediction::latency_ms: one frame alone
  double mac_share() const { return macs > 0 ? dpu_macs / macs : 0.0; }
  double time_share() const { return frame_ms > 0 ? dpu_ms / frame_ms : 0.0; }
  DpuUse& operator+=(const DpuUse& o) {
    macs += o.macs;
    dpu_macs += o.dpu_macs;
    dpu_ms += o.dpu_ms;
    frame_ms += o.frame_ms;
    return *this;
  }
};
DpuUse dpu_use(const Prediction& prediction);

// A model's time grouped by block (docs/perf.md "Per block"): ops keyed by their name's
// path up to the first part named `block<N>` (expert0/block1), else by its first part
// (stem, join, tail, classifier). Subgraph launches are not ops and are left out.
struct BlockTiming {
  std::string block;
  int ops = 0;  // ops that cost time
  double dpu_ms = 0;
  double cpu_ms = 0;
};
// Blocks in the order their first op runs.
std::vector<BlockTiming> time_per_block(const Prediction& prediction);
std::string block_of(std::string_view op_name);

// The calibration procedure (docs/perf.md): the compute_efficiency that makes `graph`
// run at `fps` on `target` (all other fields kept). Throws when no efficiency in (0, 1]
// reaches it.
double calibrate_compute_efficiency(const Graph& graph, const Target& target, double fps);

}  // namespace dpushard
