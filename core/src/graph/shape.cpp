#include "dpushard/graph/shape.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>

#include "dpushard/graph/numerics.hpp"
#include "dpushard/graph/window.hpp"

namespace dpushard {
namespace {

using Shape = std::vector<std::int64_t>;

std::string who(const Op& op) { return "op '" + op.name + "' (" + op.type + ")"; }

[[noreturn]] void fail(const Op& op, const std::string& what) {
  throw Error(who(op) + ": " + what);
}

const Shape& producer_shape(const Graph& g, const Op& op, std::string_view arg, std::size_t i) {
  const auto& ps = op.producers(arg);
  if (i >= ps.size())
    fail(op, "missing input '" + std::string(arg) + "'" + (i ? " #" + std::to_string(i) : ""));
  const Op* p = g.find(ps[i]);
  if (p == nullptr) fail(op, "input '" + std::string(arg) + "' names a missing op '" + ps[i] + "'");
  return p->output.shape;
}

std::int64_t normalize_axis(const Op& op, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r)
    fail(op, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis;
}

// One spatial dimension of a conv or pool output.
std::int64_t window_out(const Op& op, std::int64_t in, std::int64_t kernel, std::int64_t stride,
                        std::int64_t dilation, std::int64_t pad_lo, std::int64_t pad_hi,
                        const std::string& pad_mode) {
  if (kernel <= 0 || stride <= 0 || dilation <= 0)
    fail(op, "kernel, stride and dilation must be > 0");
  if (pad_mode == "SAME") return (in + stride - 1) / stride;
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t padded = pad_mode == "VALID" ? in : in + pad_lo + pad_hi;
  if (padded < span)
    fail(op,
         "window " + std::to_string(span) + " larger than padded input " + std::to_string(padded));
  const std::int64_t num = padded - span;
  if (pad_mode == "CEIL") return (num + stride - 1) / stride + 1;
  return num / stride + 1;  // FLOOR, the PyTorch convention
}

Shape spatial_out(const Op& op, const Shape& in, const Window& w, std::int64_t channels) {
  if (in.size() != 4) fail(op, "expects an NHWC input, got " + shape_text(in));
  return {in[0],
          window_out(op, in[1], w.kernel_h, w.stride_h, w.dilation_h, w.pad_top, w.pad_bottom,
                     w.pad_mode),
          window_out(op, in[2], w.kernel_w, w.stride_w, w.dilation_w, w.pad_left, w.pad_right,
                     w.pad_mode),
          channels};
}

Shape broadcast(const Op& op, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const std::int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op, "cannot broadcast " + shape_text(a) + " with " + shape_text(b));
    out[i] = std::max(da, db);
  }
  return out;
}

// Values of a small shape operand: a const, or a stack of scalar consts (ResNet-20 fixture).
Shape shape_operand(const Graph& g, const Op& op, const std::string& producer) {
  const Op& p = g.op(producer);
  if (p.type == "const") {
    Shape out;
    for (float v : const_values(p)) out.push_back(static_cast<std::int64_t>(std::lround(v)));
    return out;
  }
  if (p.type == "stack") {
    Shape out;
    for (const auto& part : p.producers("input")) {
      auto vals = shape_operand(g, op, part);
      out.insert(out.end(), vals.begin(), vals.end());
    }
    return out;
  }
  fail(op, "shape operand '" + producer + "' is a " + p.type + ", not a const or stack");
}

Shape reshape_out(const Graph& g, const Op& op, const Shape& in) {
  Shape target;
  const auto& shape_args = op.producers("shape");
  if (!shape_args.empty())
    target = shape_operand(g, op, shape_args.front());
  else
    target = ints_attr(op.attrs, "shape", who(op));
  const std::int64_t total =
      std::accumulate(in.begin(), in.end(), std::int64_t{1}, std::multiplies<>());
  std::int64_t known = 1;
  int infer_at = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && i < in.size()) target[i] = in[i];
    if (target[i] == -1) {
      if (infer_at >= 0) fail(op, "more than one -1 in shape " + shape_text(target));
      infer_at = static_cast<int>(i);
    } else if (target[i] <= 0) {
      fail(op, "bad dimension in shape " + shape_text(target));
    } else {
      known *= target[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      fail(op, "cannot reshape " + shape_text(in) + " to " + shape_text(target));
    target[static_cast<std::size_t>(infer_at)] = total / known;
  }
  const std::int64_t count =
      std::accumulate(target.begin(), target.end(), std::int64_t{1}, std::multiplies<>());
  if (count != total) fail(op, "cannot reshape " + shape_text(in) + " to " + shape_text(target));
  return target;
}

// One function per op type: the output shape from the producers' shapes and the attributes.
// `kShapeRules` below is also the list of op types an `_int` graph may hold.
using ShapeRule = Shape (*)(const Graph&, const Op&);

Shape declared_shape(const Graph&, const Op& op) {
  auto shape = ints_attr_or(op.attrs, "shape", op.output.shape);
  if (shape.empty()) fail(op, "has no shape");
  return shape;
}

Shape input_shape(const Graph& g, const Op& op) { return producer_shape(g, op, "input", 0); }

Shape conv_shape(const Graph& g, const Op& op) {
  const Shape& in = producer_shape(g, op, "input", 0);
  const Shape& w = producer_shape(g, op, "weights", 0);
  if (w.size() != 4) fail(op, "weights must be [OC,KH,KW,IC], got " + shape_text(w));
  const Window win = window_of(op);
  if (win.global) fail(op, "a conv has no global window");
  if (w[1] != win.kernel_h || w[2] != win.kernel_w)
    fail(op, "weights " + shape_text(w) + " do not match kernel " + std::to_string(win.kernel_h) +
                 "x" + std::to_string(win.kernel_w));
  if (in.size() != 4) fail(op, "expects an NHWC input, got " + shape_text(in));
  std::int64_t oc = w[0];
  if (op.type == "conv2d") {
    const std::int64_t group = int_attr(op.attrs, "group", 1);
    if (group <= 0 || in[3] % group != 0 || w[0] % group != 0 || w[3] * group != in[3])
      fail(op, "input channels " + std::to_string(in[3]) + " do not match weights " +
                   shape_text(w) + " with group " + std::to_string(group));
  } else {
    if (w[3] != in[3])
      fail(op, "depthwise weights " + shape_text(w) + " do not match " + std::to_string(in[3]) +
                   " input channels");
    oc = w[0] * in[3];
  }
  if (!op.producers("bias").empty()) {
    const Shape& b = producer_shape(g, op, "bias", 0);
    if (b.size() != 1 || b[0] != oc)
      fail(op, "bias " + shape_text(b) + " must be [" + std::to_string(oc) + "]");
  }
  return spatial_out(op, in, win, oc);
}

Shape pool_shape(const Graph& g, const Op& op) {
  const Shape& in = producer_shape(g, op, "input", 0);
  if (in.size() != 4) fail(op, "expects an NHWC input, got " + shape_text(in));
  const Window win = window_of(op);
  if (win.global) return {in[0], 1, 1, in[3]};
  return spatial_out(op, in, win, in[3]);
}

Shape eltwise_shape(const Graph& g, const Op& op) {
  const auto& ps = op.producers("input");
  if (ps.size() < 2) fail(op, "needs at least 2 inputs");
  Shape out = producer_shape(g, op, "input", 0);
  for (std::size_t i = 1; i < ps.size(); ++i)
    out = broadcast(op, out, producer_shape(g, op, "input", i));
  return out;
}

Shape concat_shape(const Graph& g, const Op& op) {
  const auto& ps = op.producers("input");
  if (ps.empty()) fail(op, "needs inputs");
  Shape out = producer_shape(g, op, "input", 0);
  const auto axis =
      static_cast<std::size_t>(normalize_axis(op, int_attr(op.attrs, "axis", -1), out.size()));
  for (std::size_t i = 1; i < ps.size(); ++i) {
    const Shape& s = producer_shape(g, op, "input", i);
    if (s.size() != out.size()) fail(op, "inputs of different rank");
    for (std::size_t d = 0; d < s.size(); ++d)
      if (d != axis && s[d] != out[d])
        fail(op, "input " + shape_text(s) + " does not match " + shape_text(out) + " off the axis");
    out[axis] += s[axis];
  }
  return out;
}

Shape stack_shape(const Graph& g, const Op& op) {
  const auto& ps = op.producers("input");
  if (ps.empty()) fail(op, "needs inputs");
  Shape in = producer_shape(g, op, "input", 0);
  auto axis = int_attr(op.attrs, "axis", 0);
  if (axis < 0) axis += static_cast<std::int64_t>(in.size()) + 1;
  if (axis < 0 || axis > static_cast<std::int64_t>(in.size())) fail(op, "axis out of range");
  in.insert(in.begin() + axis, static_cast<std::int64_t>(ps.size()));
  return in;
}

Shape reshape_shape(const Graph& g, const Op& op) {
  return reshape_out(g, op, producer_shape(g, op, "input", 0));
}

Shape squeeze_shape(const Graph& g, const Op& op) {
  Shape out;
  for (auto d : producer_shape(g, op, "input", 0))
    if (d != 1) out.push_back(d);
  return out;
}

Shape flatten_shape(const Graph& g, const Op& op) {
  const Shape& in = producer_shape(g, op, "input", 0);
  const auto s =
      static_cast<std::size_t>(normalize_axis(op, int_attr(op.attrs, "start_axis", 1), in.size()));
  const auto e =
      static_cast<std::size_t>(normalize_axis(op, int_attr(op.attrs, "end_axis", -1), in.size()));
  if (e < s) fail(op, "end_axis before start_axis");
  Shape out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(s));
  out.push_back(std::accumulate(in.begin() + static_cast<std::ptrdiff_t>(s),
                                in.begin() + static_cast<std::ptrdiff_t>(e) + 1, std::int64_t{1},
                                std::multiplies<>()));
  out.insert(out.end(), in.begin() + static_cast<std::ptrdiff_t>(e) + 1, in.end());
  return out;
}

Shape transpose_shape(const Graph& g, const Op& op) {
  const Shape& in = producer_shape(g, op, "input", 0);
  const auto order = ints_attr(op.attrs, "order", who(op));
  if (order.size() != in.size())
    fail(op, "order " + shape_text(order) + " for input " + shape_text(in));
  Shape out(in.size());
  std::vector<bool> used(in.size(), false);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto a = static_cast<std::size_t>(normalize_axis(op, order[i], in.size()));
    if (used[a]) fail(op, "order " + shape_text(order) + " repeats an axis");
    used[a] = true;
    out[i] = in[a];
  }
  return out;
}

Shape matmul_shape(const Graph& g, const Op& op) {
  const auto& ps = op.producers("input");
  if (ps.size() != 2) fail(op, "needs 2 inputs");
  Shape a = producer_shape(g, op, "input", 0);
  Shape b = producer_shape(g, op, "input", 1);
  if (a.size() < 2 || b.size() < 2) fail(op, "inputs must have rank >= 2");
  if (bool_attr(op.attrs, "transpose_a", false)) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (bool_attr(op.attrs, "transpose_b", false)) std::swap(b[b.size() - 1], b[b.size() - 2]);
  const std::int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
  if (k != kb) fail(op, "inner dimensions differ: " + shape_text(a) + " x " + shape_text(b));
  Shape batch = broadcast(op, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  batch.push_back(m);
  batch.push_back(n);
  if (!op.producers("bias").empty()) {
    const Shape& bias = producer_shape(g, op, "bias", 0);
    if (bias.size() != 1 || bias[0] != n)
      fail(op, "bias " + shape_text(bias) + " must be [" + std::to_string(n) + "]");
  }
  return batch;
}

Shape inner_product_shape(const Graph& g, const Op& op) {
  const Shape& in = producer_shape(g, op, "input", 0);
  const Shape& w = producer_shape(g, op, "weights", 0);
  const auto axis =
      static_cast<std::size_t>(normalize_axis(op, int_attr(op.attrs, "axis", 1), in.size()));
  const std::int64_t k = std::accumulate(in.begin() + static_cast<std::ptrdiff_t>(axis), in.end(),
                                         std::int64_t{1}, std::multiplies<>());
  if (w.size() != 2 || w[1] != k)
    fail(op, "weights " + shape_text(w) + " do not match K = " + std::to_string(k));
  Shape out(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(axis));
  out.push_back(w[0]);
  return out;
}

const std::map<std::string, ShapeRule, std::less<>>& shape_rules() {
  static const std::map<std::string, ShapeRule, std::less<>> kShapeRules = {
      {"data", declared_shape},
      {"const", declared_shape},
      // Ops whose output has their input's shape.
      {"fix", input_shape},
      {"relu", input_shape},
      {"relu6", input_shape},
      {"leaky-relu", input_shape},
      {"gelu", input_shape},
      {"sigmoid", input_shape},
      {"softmax", input_shape},
      {"hard-sigmoid", input_shape},
      {"hard-swish", input_shape},
      {"identity", input_shape},
      {"layernorm", input_shape},
      {"tanh", input_shape},
      {"conv2d", conv_shape},
      {"depthwise-conv2d", conv_shape},
      {"maxpool2d", pool_shape},
      {"avgpool2d", pool_shape},
      {"add", eltwise_shape},
      {"mul", eltwise_shape},
      {"concat", concat_shape},
      {"stack", stack_shape},
      {"reshape", reshape_shape},
      {"squeeze", squeeze_shape},
      {"flatten", flatten_shape},
      {"transpose", transpose_shape},
      {"matmul", matmul_shape},
      {"inner-product", inner_product_shape},
  };
  return kShapeRules;
}

}  // namespace

bool is_known_int_op(std::string_view type) { return shape_rules().count(type) != 0; }

std::vector<std::int64_t> infer_output_shape(const Graph& g, const Op& op) {
  const auto& rules = shape_rules();
  const auto rule = rules.find(op.type);
  if (rule == rules.end()) fail(op, "unknown op type");
  return rule->second(g, op);
}

void infer_shapes(Graph& graph) {
  for (std::size_t i : graph.topological_order()) {
    Op& op = graph.mutable_ops()[i];
    Shape shape = infer_output_shape(graph, op);
    if (!op.output.shape.empty() && op.output.shape != shape)
      fail(op, "stored shape " + shape_text(op.output.shape) + " differs from inferred " +
                   shape_text(shape));
    op.output.shape = std::move(shape);
    if (op.output.name.empty()) op.output.name = op.name;
  }
}

void validate(const Graph& graph) {
  graph.topological_order();  // producers exist, no cycles
  for (const Op& op : graph.ops()) {
    if (!is_known_int_op(op.type)) fail(op, "unknown op type for an _int graph");
    const Shape shape = infer_output_shape(graph, op);
    if (op.output.shape != shape)
      fail(op,
           "shape " + shape_text(op.output.shape) + " differs from inferred " + shape_text(shape));
    if (op.type == "fix") {
      const auto bits = int_attr(op.attrs, "bit_width", 8);
      if (bits != 8) fail(op, "bit_width " + std::to_string(bits) + " (the DPU is int8)");
      const auto fp = int_attr(op.attrs, "fix_point", 1000);
      if (fp < -32 || fp > 32) fail(op, "fix_point missing or out of range [-32, 32]");
      parse_round_mode(string_attr(op.attrs, "round_mode", "DPU_ROUND"));
    } else if (op.type == "const") {
      const auto n = static_cast<std::size_t>(op.output.element_count());
      const auto* data = find_attr<Bytes>(op.attrs, "data");
      if (data == nullptr && weights_omitted(graph)) continue;  // shapes only, by design
      if (data == nullptr) fail(op, "const without data");
      if (data->data.size() != n * sizeof(float))
        fail(op, "data holds " + std::to_string(data->data.size()) + " bytes for " +
                     std::to_string(n) + " float32 values");
    }
  }
}

}  // namespace dpushard

std::string dpushard::shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::int64_t dpushard::element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (const std::int64_t dim : shape) count *= dim;
  return count;
}
