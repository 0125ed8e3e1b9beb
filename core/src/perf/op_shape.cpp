#include "op_shape.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/window.hpp"

namespace dpushard::perf {
namespace {

using Shape = std::vector<std::int64_t>;

std::string who(const Op& op) { return "op '" + op.name + "' (" + op.type + ")"; }

[[noreturn]] void fail(const Op& op, const std::string& what) {
  throw Error(who(op) + ": " + what);
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

const Op& producer(const Graph& g, const Op& op, std::string_view arg, std::size_t i) {
  const auto& ps = op.producers(arg);
  if (i >= ps.size()) fail(op, "missing input '" + std::string(arg) + "'");
  const Op* p = g.find(ps[i]);
  if (p == nullptr) fail(op, "input '" + std::string(arg) + "' names a missing op '" + ps[i] + "'");
  return *p;
}

const Shape& output_shape(const Op& op, std::size_t rank) {
  if (op.output.shape.size() != rank)
    fail(op, "needs a rank-" + std::to_string(rank) + " output shape, has rank " +
                 std::to_string(op.output.shape.size()));
  return op.output.shape;
}

const Shape& input_shape(const Graph& g, const Op& op, std::size_t rank) {
  const Op& p = producer(g, op, "input", 0);
  if (p.output.shape.size() != rank)
    fail(op, "needs a rank-" + std::to_string(rank) + " input, '" + p.name + "' has rank " +
                 std::to_string(p.output.shape.size()));
  return p.output.shape;
}

// "conv2d-fix" -> "conv2d".
std::string_view base_type(std::string_view type) {
  if (type.ends_with("-fix")) type.remove_suffix(4);
  return type;
}

bool is_free_type(std::string_view type) {
  static const std::set<std::string, std::less<>> kFree = {
      "data",        "const",         "fix",         "stack",       "concat",    "reshape",
      "flatten",     "transpose",     "squeeze",     "identity",    "data-fix",  "const-fix",
      "concat-fix",  "reshape-fix",   "upload",      "download",    "fix2float", "float2fix",
      "flatten-fix", "transpose-fix", "squeeze-fix", "identity-fix"};
  return kFree.count(type) != 0;
}

bool is_nonlinear_type(std::string_view type) {
  return type == "relu" || type == "relu6" || type == "leaky-relu" || type == "hard-sigmoid" ||
         type == "hard-swish";
}

// The nonlinears the DPUCZDX8G's conv and ALU engines apply on the way out (PG338 "ReLU
// Type": ReLU, ReLU6 and the fixed-slope LeakyReLU; unlike the DPUCVDX8G, PG389, it lists no
// hard-sigmoid or hard-swish). Hard-sigmoid and hard-swish run as elementwise passes of
// their own (vai_q_pytorch's xop_creator: hard-swish = hard-sigmoid(x) x x, an XIR mul).
bool fusable_nonlinear(std::string_view type) {
  return type == "relu" || type == "relu6" || type == "leaky-relu";
}

// Producers the DPU fuses a following nonlinear into (XIR's `nonlinear` attribute).
bool fuses_nonlinear(std::string_view type) {
  type = base_type(type);
  return type == "conv2d" || type == "depthwise-conv2d" || type == "matmul" ||
         type == "inner-product" || type == "add" || type == "mul" || type == "eltwise" ||
         type == "transposed-conv2d";
}

// The producer the DPU fuses `op` (a nonlinear) into, if any: directly, or through the
// quantizer's fix between them when `op` is that fix's only consumer (a conv's
// hard-swish as the importer writes it: conv -> fix -> hard-swish -> fix).
bool fused_into_producer(const Graph& g, const Op& op) {
  const auto& in = op.producers("input");
  const Op* p = in.empty() ? nullptr : g.find(in.front());
  if (p != nullptr && p->type == "fix" && g.consumers(p->name).size() == 1) {
    const auto& fix_in = p->producers("input");
    p = fix_in.empty() ? nullptr : g.find(fix_in.front());
  }
  return p != nullptr && fuses_nonlinear(p->type);
}

// Float operations per output element of the CPU-only ops (dequantize and requantize
// included); rough counts for plain reference kernels, see docs/perf.md.
double flops_per_element(std::string_view type) {
  type = base_type(type);
  if (type == "softmax") return 25;  // max, exp, sum, divide
  if (type == "gelu") return 25;     // erf
  if (type == "sigmoid" || type == "tanh") return 22;
  if (type == "layernorm") return 10;
  if (type == "hard-swish") return 6;
  if (type == "hard-sigmoid") return 5;
  if (type == "leaky-relu" || type == "relu6") return 4;
  return 3;
}

CpuClass float_class(std::string_view type) {
  type = base_type(type);
  if (type == "softmax" || type == "gelu" || type == "sigmoid" || type == "tanh")
    return CpuClass::Transcendental;
  if (type == "layernorm") return CpuClass::Normalization;
  return CpuClass::Elementwise;
}

// Output laid out on the engine: channels last, pixels along the next axis, rows the rest.
void map_output(OpShape& s, const Shape& out) {
  const std::size_t r = out.size();
  s.channels = r >= 1 ? out[r - 1] : 1;
  s.width = r >= 2 ? out[r - 2] : 1;
  s.rows = r >= 2 ? product(out, 0, r - 2) : 1;
}

// Weights, activations in and out (one byte each on the DPU).
void count_bytes(const Graph& g, const Op& op, OpShape& s) {
  for (const auto& arg : op.args) {
    if (arg.name == "shape") continue;
    for (const auto& name : arg.producers) {
      const Op* p = g.find(name);
      if (p == nullptr) fail(op, "input names a missing op '" + name + "'");
      (is_weight(g, name) ? s.weight_bytes : s.input_bytes) += p->output.element_count();
    }
  }
  s.output_bytes = op.output.element_count();
}

OpShape conv_shape(const Graph& g, const Op& op, bool depthwise_type) {
  OpShape s;
  const Shape& in = input_shape(g, op, 4);
  const Shape& out = output_shape(op, 4);
  const Window win = window_of(op);
  s.kh = win.kernel_h;
  s.kw = win.kernel_w;
  s.sh = win.stride_h;
  s.sw = win.stride_w;
  s.group = std::max<std::int64_t>(1, int_attr(op.attrs, "group", 1));
  s.rows = out[0] * out[1];
  s.width = out[2];
  s.channels = out[3];
  const std::int64_t ic = in[3];
  const bool channelwise = s.group > 1 && s.group == ic && out[3] == ic;
  if (depthwise_type || channelwise) {
    s.kind = OpKind::Depthwise;
    s.cpu_class = CpuClass::Depthwise;
    s.in_channels = 1;
    s.macs = s.rows * s.width * s.channels * s.kh * s.kw;
  } else {
    s.kind = OpKind::Conv;
    s.cpu_class = CpuClass::Gemm;
    if (ic % s.group != 0) fail(op, "input channels not divisible by group");
    s.in_channels = ic / s.group;
    s.macs = s.rows * s.width * s.channels * s.kh * s.kw * s.in_channels;
    if (s.group > 1)
      s.cpu_reason =
          "grouped conv (group " + std::to_string(s.group) + ") is neither plain nor depthwise";
  }
  s.cpu_flops = 2.0 * static_cast<double>(s.macs);
  return s;
}

OpShape matmul_shape(const Graph& g, const Op& op) {
  OpShape s;
  const auto& ins = op.producers("input");
  if (ins.size() != 2) fail(op, "needs 2 inputs");
  const Shape& a = producer(g, op, "input", 0).output.shape;
  if (a.size() < 2) fail(op, "input a must have rank >= 2");
  const bool ta = bool_attr(op.attrs, "transpose_a", false);
  s.in_channels = ta ? a[a.size() - 2] : a.back();
  s.cpu_class = CpuClass::Gemm;
  map_output(s, op.output.shape);
  s.macs = s.rows * s.width * s.channels * s.in_channels;
  s.cpu_flops = 2.0 * static_cast<double>(s.macs);
  if (is_weight(g, ins[1])) {
    s.kind = OpKind::Conv;  // the compiler turns it into a 1x1 conv
  } else {
    s.kind = OpKind::FloatOp;
    s.cpu_reason = "matmul of two feature maps has no DPU conv form";
  }
  return s;
}

OpShape inner_product_shape(const Graph& g, const Op& op) {
  OpShape s;
  s.kind = OpKind::Conv;
  const Shape& w = producer(g, op, "weights", 0).output.shape;
  if (w.size() != 2) fail(op, "weights must be [N, K]");
  s.cpu_class = CpuClass::Gemm;
  s.in_channels = w[1];
  map_output(s, op.output.shape);
  s.macs = s.rows * s.width * s.channels * s.in_channels;
  s.cpu_flops = 2.0 * static_cast<double>(s.macs);
  return s;
}

OpShape pool_shape(const Graph& g, const Op& op) {
  OpShape s;
  s.kind = OpKind::Pool;
  const Shape& in = input_shape(g, op, 4);
  const Shape& out = output_shape(op, 4);
  const Window win = window_of(op).over(in[1], in[2]);
  s.kh = win.kernel_h;
  s.kw = win.kernel_w;
  s.sh = win.stride_h;
  s.sw = win.stride_w;
  if (out[1] == 1 && out[2] == 1) s.sh = s.sw = 1;  // one window: the stride is moot
  s.rows = out[0] * out[1];
  s.width = out[2];
  s.channels = out[3];
  s.in_channels = 1;
  s.element_ops = op.output.element_count() * s.kh * s.kw;
  s.cpu_flops = static_cast<double>(s.element_ops);
  return s;
}

OpShape eltwise_shape(const Op& op, std::int64_t operands) {
  OpShape s;
  s.kind = OpKind::Eltwise;
  s.operands = operands;
  map_output(s, op.output.shape);
  s.element_ops = op.output.element_count() * operands;
  s.cpu_flops = 3.0 * static_cast<double>(s.element_ops);  // dequantize, operate, requantize
  return s;
}

OpShape float_shape(const Op& op, std::string reason) {
  OpShape s;
  s.kind = OpKind::FloatOp;
  map_output(s, op.output.shape);
  s.cpu_flops = flops_per_element(op.type) * static_cast<double>(op.output.element_count());
  s.cpu_class = float_class(op.type);
  s.cpu_reason = std::move(reason);
  return s;
}

// The quantizer's avgpool correction: mul(avgpool, float const) folds into the pool factor.
bool is_folded_pool_scale(const Graph& g, const Op& op) {
  bool has_pool = false, has_raw_const = false;
  for (const auto& name : op.producers("input")) {
    const Op* p = g.find(name);
    if (p == nullptr) return false;
    has_pool |= p->type == "avgpool2d";
    has_raw_const |= p->type == "const";
  }
  return has_pool && has_raw_const;
}

bool is_cpu_op_type(const Target& target, std::string_view type) {
  return std::find(target.cpu_ops.begin(), target.cpu_ops.end(), base_type(type)) !=
         target.cpu_ops.end();
}

OpShape classify(const Graph& g, const Op& op, const Target& target) {
  const std::string_view type = op.type;
  if (is_free_type(type)) return {};
  const std::string_view base = base_type(type);
  if (base == "conv2d") return conv_shape(g, op, false);
  if (base == "depthwise-conv2d") return conv_shape(g, op, true);
  if (base == "matmul") return matmul_shape(g, op);
  if (base == "inner-product") return inner_product_shape(g, op);
  if (base == "maxpool2d" || base == "avgpool2d" || type == "pool-fix") return pool_shape(g, op);
  if (type == "add" || type == "mul" || type == "eltwise-fix" || type == "eltwise") {
    if (type == "mul" && is_folded_pool_scale(g, op)) return {};
    return eltwise_shape(op, static_cast<std::int64_t>(op.producers("input").size()));
  }
  if (is_cpu_op_type(target, type))
    return float_shape(op, std::string(base) + " runs on the CPU on " + target.arch);
  if (is_nonlinear_type(type)) {
    if (type == "leaky-relu") {
      const double alpha = float_attr(op.attrs, "alpha", target.leaky_alpha);
      if (std::abs(alpha - target.leaky_alpha) > 1e-4) {
        return float_shape(op, "leaky-relu alpha " + std::to_string(alpha).substr(0, 6) +
                                   " (the DPU runs only " +
                                   std::to_string(target.leaky_alpha).substr(0, 6) + ")");
      }
    }
    if (fusable_nonlinear(type) && fused_into_producer(g, op)) return {};
    if (type == "hard-swish") {
      // Two ALU passes: h = hard-sigmoid(x) (one operand), then x * h (two operands); h is
      // written to DDR and read back, x is read twice.
      OpShape s = eltwise_shape(op, 3);
      s.intermediate_bytes = 3 * op.output.element_count();
      return s;
    }
    return eltwise_shape(op, 1);
  }
  // Compiled ops the compiler kept on the DPU but this model does not know: misc engine.
  if (type.ends_with("-fix") && string_attr(op.attrs, "device", "DPU") == "DPU")
    return eltwise_shape(op, 1);
  return float_shape(op, "op type '" + std::string(type) + "' has no DPU equivalent");
}

}  // namespace

double cpu_gflops(const Target& t, CpuClass c) {
  switch (c) {
    case CpuClass::Gemm:
      return t.cpu_gemm_gflops;
    case CpuClass::Depthwise:
      return t.cpu_depthwise_gflops;
    case CpuClass::Transcendental:
      return t.cpu_transcendental_gflops;
    case CpuClass::Normalization:
      return t.cpu_normalization_gflops;
    case CpuClass::Elementwise:
      break;
  }
  return t.cpu_elementwise_gflops;
}

std::string_view cpu_class_key(CpuClass c) {
  switch (c) {
    case CpuClass::Gemm:
      return "gemm";
    case CpuClass::Depthwise:
      return "depthwise";
    case CpuClass::Transcendental:
      return "transcendental";
    case CpuClass::Normalization:
      return "normalization";
    case CpuClass::Elementwise:
      break;
  }
  return "elementwise";
}

bool is_weight(const Graph& graph, const std::string& name) {
  const Op* o = graph.find(name);
  for (int hops = 0; o != nullptr && hops < 16; ++hops) {
    if (o->type == "const" || o->type == "const-fix") return true;
    if (o->type != "fix" && !is_layout_op(o->type)) return false;
    const auto& in = o->producers("input");
    if (in.empty()) return false;
    o = graph.find(in.front());
  }
  return false;
}

OpShape describe_op(const Graph& graph, const Op& op, const Target& target) {
  OpShape s = classify(graph, op, target);
  if (s.kind != OpKind::Free) count_bytes(graph, op, s);
  return s;
}

std::string limit_violation(const OpShape& s, const Target& t) {
  if (!s.cpu_reason.empty()) return s.cpu_reason;
  if (s.kind != OpKind::Conv && s.kind != OpKind::Depthwise && s.kind != OpKind::Pool) return {};
  const auto out_of = [](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    return v < lo || v > hi;
  };
  const auto range = [](std::int64_t lo, std::int64_t hi) {
    return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  };
  if (out_of(s.kh, t.kernel_min, t.kernel_max) || out_of(s.kw, t.kernel_min, t.kernel_max))
    return "kernel " + std::to_string(s.kh) + "x" + std::to_string(s.kw) + " outside " +
           range(t.kernel_min, t.kernel_max);
  if (out_of(s.sh, t.stride_min, t.stride_max) || out_of(s.sw, t.stride_min, t.stride_max))
    return "stride " + std::to_string(s.sh) + "x" + std::to_string(s.sw) + " outside " +
           range(t.stride_min, t.stride_max);
  if (s.kind == OpKind::Conv) {
    const std::int64_t groups = s.kh * s.kw * ceil_div(s.in_channels, t.input_channel_parallelism);
    if (groups > t.max_kernel_icgroups)
      return "kw*kh*ceil(ic/" + std::to_string(t.input_channel_parallelism) +
             ") = " + std::to_string(groups) + " > " + std::to_string(t.max_kernel_icgroups);
    if (s.channels > t.max_output_channels)
      return "output channels " + std::to_string(s.channels) + " > " +
             std::to_string(t.max_output_channels);
  }
  return {};
}

std::int64_t dpu_cycles(const OpShape& s, const Target& t) {
  const std::int64_t icp = t.input_channel_parallelism;
  const std::int64_t pixel_steps = ceil_div(s.width, t.pixel_parallelism) * s.rows;
  const std::int64_t alu_steps = ceil_div(s.width, t.alu_pixel_parallelism) * s.rows;
  switch (s.kind) {
    case OpKind::Conv: {
      // Narrow inputs (the RGB stem) pack kw*ic into the input-channel lanes.
      const std::int64_t taps_per_row = t.channel_augmentation && s.in_channels < icp && s.kw > 1
                                            ? ceil_div(s.kw * s.in_channels, icp)
                                            : s.kw * ceil_div(s.in_channels, icp);
      return ceil_div(s.channels, t.output_channel_parallelism) * pixel_steps * s.kh * taps_per_row;
    }
    case OpKind::Depthwise:
    case OpKind::Pool:
      // The ALU engine: one channel group of alu_pixel_parallelism pixels per tap.
      return ceil_div(s.channels, icp) * alu_steps * s.kh * s.kw;
    case OpKind::Eltwise:
      return ceil_div(s.channels, icp) * alu_steps * s.operands;
    case OpKind::Free:
    case OpKind::FloatOp:
      break;
  }
  return 0;
}

std::int64_t padded_work(const OpShape& s, const Target& t) {
  const std::int64_t cycles = dpu_cycles(s, t);
  if (s.kind == OpKind::Conv) return cycles * t.peak_macs_per_cycle();
  return cycles * t.alu_pixel_parallelism * t.input_channel_parallelism;
}

}  // namespace dpushard::perf
