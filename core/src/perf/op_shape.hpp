#pragma once
// What one op asks of the engine: its kind, its output mapped onto rows x pixels x
// channels, its kernel and stride, and the bytes it moves. Read from `_int` ops
// (conv2d, add, ...) and from compiled ops (conv2d-fix, eltwise-fix, pool-fix, ...) alike.

#include <cstdint>
#include <string>

#include "dpushard/graph/graph.hpp"
#include "dpushard/perf/perf.hpp"

namespace dpushard::perf {

enum class OpKind {
  Free,       // no time of its own: data, const, fix, layout, concat, fused nonlinears
  Conv,       // conv2d, conv2d-fix, matmul with weights, inner-product
  Depthwise,  // depthwise-conv2d(-fix), conv2d with group = channels
  Pool,       // maxpool2d, avgpool2d, pool-fix
  Eltwise,    // add, mul, eltwise-fix, standalone DPU nonlinears
  FloatOp,    // an op only the CPU runs (softmax, layernorm, two-activation matmul, ...)
};

// The CPU fallback's op classes, each with its own float rate in the target (cpu.fallback_gflops).
enum class CpuClass { Gemm, Depthwise, Elementwise, Transcendental, Normalization };

// The target's rate for `c`, GFLOP/s.
double cpu_gflops(const Target& target, CpuClass c);
// Its key in the target's cpu.fallback_gflops: "gemm", "depthwise", ...
std::string_view cpu_class_key(CpuClass c);

struct OpShape {
  OpKind kind = OpKind::Free;
  // Output mapped onto the engine: `rows` output rows (batch x height), `width` output
  // pixels per row (the pixel-parallel axis), `channels` output channels.
  std::int64_t rows = 1;
  std::int64_t width = 1;
  std::int64_t channels = 1;
  std::int64_t in_channels = 1;  // per group
  std::int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  std::int64_t group = 1;
  std::int64_t operands = 1;     // eltwise inputs
  std::int64_t macs = 0;         // useful multiply-accumulates (conv-like ops)
  std::int64_t element_ops = 0;  // pool window taps or eltwise operand reads
  std::int64_t weight_bytes = 0;
  std::int64_t input_bytes = 0;
  std::int64_t output_bytes = 0;
  // DDR bytes of intermediates an op made of several engine passes writes and reads back
  // (hard-swish: the hard-sigmoid map, and the input read a second time).
  std::int64_t intermediate_bytes = 0;
  double cpu_flops = 0;  // float operations when run on the CPU
  CpuClass cpu_class = CpuClass::Elementwise;
  std::string cpu_reason;  // set when only the CPU can run it (whatever the limits)
};

// Shape of `op` in `graph`. Throws dpushard::Error naming the op when a shape it needs is
// missing or has the wrong rank.
OpShape describe_op(const Graph& graph, const Op& op, const Target& target);

// Why the DPU cannot run `shape` under the target's limits; empty when it can.
std::string limit_violation(const OpShape& shape, const Target& target);

// Compute cycles at full efficiency, padding channels and pixels to the parallelism.
std::int64_t dpu_cycles(const OpShape& shape, const Target& target);
// MAC (or ALU lane) slots those cycles spend, padding included.
std::int64_t padded_work(const OpShape& shape, const Target& target);

// True when `name` carries weights: a const, a const-fix, or a fix / layout op over one.
bool is_weight(const Graph& graph, const std::string& name);

}  // namespace dpushard::perf
