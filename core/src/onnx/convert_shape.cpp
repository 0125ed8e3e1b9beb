// Ops that move or select elements: Flatten, Reshape, (Un)Squeeze, Transpose, the
// Slice/Gather/Split of attention exports, and pass-through ops.
#include <algorithm>
#include <numeric>

#include "const_fold.hpp"
#include "converter.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard::onnximport {
namespace {

std::vector<std::int64_t> axes_input_or_attr(const Node& n,
                                             const std::optional<ConstTensor>& input) {
  if (input) return input->ints();
  return n.attr_ints("axes", {});
}

}  // namespace

// Reshape to a 2-D [batch, features] for fully connected layers: when the input is an
// NCHW map held in NHWC, the consumers' weight columns are permuted instead of moving
// the activation (no transpose on the DPU).
static bool feeds_only_linear(const std::vector<const Node*>& users, const std::string& tensor,
                              const std::unordered_map<std::string, Val>& values) {
  if (users.empty()) return false;
  for (const Node* c : users) {
    if (c->type != "Gemm" && c->type != "MatMul") return false;
    if (c->input(0) != tensor || c->input(1) == tensor) return false;
    auto it = values.find(c->input(1));
    if (it == values.end() || !std::holds_alternative<ConstTensor>(it->second)) return false;
    if (c->type == "Gemm" && c->attr_int("transA", 0) != 0) return false;
  }
  return true;
}

void Converter::flatten(const Node& n) {
  const Act a = act_input(n, 0);
  const auto rank = static_cast<std::int64_t>(a.shape.size());
  std::int64_t axis = n.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) throw Error(n.who() + ": axis out of range");
  std::int64_t outer = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= a.shape[static_cast<std::size_t>(i)];
  Node r = n;
  r.type = "Reshape";
  const Shape target = {outer, element_count(a.shape) / std::max<std::int64_t>(outer, 1)};
  set(n.outputs.at(0), reshape_to(r, a, target));
}

void Converter::reshape_node(const Node& n) {
  const Act a = act_input(n, 0);
  const Shape target = reshape_target(n, a.shape, const_input(n, 1).ints());
  set(n.outputs.at(0), reshape_to(n, a, target));
}

Act Converter::reshape_to(const Node& n, const Act& a, const Shape& target) {
  if (auto in_place = reshape_in_place(a, target, n.name)) return *in_place;
  const std::string& out = n.outputs.at(0);
  if (target.size() == 2 && a.shape.size() >= 3 && !a.perm.empty() && a.perm[0] == 0 &&
      target[0] == a.shape[0] && !graph_outputs_.count(out) &&
      feeds_only_linear(consumers(out), out, values_)) {
    // IR order of the trailing elements, expressed as ONNX flat indices.
    const std::size_t rank = a.shape.size();
    std::vector<std::int64_t> onnx_stride(rank, 1);
    for (std::size_t i = rank - 1; i-- > 1;) onnx_stride[i] = onnx_stride[i + 1] * a.shape[i + 1];
    const Shape ir = a.ir_shape();
    std::vector<std::int64_t> index(rank, 0);
    Act flat;
    flat.shape = target;
    flat.perm = {0, 1};
    flat.row_order.reserve(static_cast<std::size_t>(target[1]));
    for (std::int64_t j = 0; j < target[1]; ++j) {
      std::int64_t onnx = 0;
      for (std::size_t i = 1; i < rank; ++i)
        onnx += index[i] * onnx_stride[static_cast<std::size_t>(a.perm[i])];
      flat.row_order.push_back(onnx);
      for (std::size_t i = rank; i-- > 1;) {
        if (++index[i] < ir[i]) break;
        index[i] = 0;
      }
    }
    flat.op = w_.op(n.name, "reshape", {{"input", {a.op}}}, {{"shape", to_i32(target)}});
    return flat;
  }
  return reshape(a, target, n.name);
}

void Converter::squeeze(const Node& n) {
  const Act a = act_input(n, 0);
  auto axes = axes_input_or_attr(n, optional_const(n, 1));
  for (auto& x : axes) x = normalize_axis(x, a.shape.size(), n.who());
  Shape target;
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    const bool listed =
        std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(i)) != axes.end();
    const bool drop = axes.empty() ? a.shape[i] == 1 : listed;
    if (drop && a.shape[i] != 1)
      throw Error(n.who() + ": cannot squeeze a dimension of size " + std::to_string(a.shape[i]));
    if (!drop) target.push_back(a.shape[i]);
  }
  set(n.outputs.at(0), reshape(a, target, n.name));
}

void Converter::unsqueeze(const Node& n) {
  const Act a = act_input(n, 0);
  auto axes = axes_input_or_attr(n, optional_const(n, 1));
  const std::size_t rank = a.shape.size() + axes.size();
  for (auto& x : axes) x = normalize_axis(x, rank, n.who());
  std::sort(axes.begin(), axes.end());
  Shape target = a.shape;
  for (auto x : axes) target.insert(target.begin() + x, 1);
  set(n.outputs.at(0), reshape(a, target, n.name));
}

void Converter::transpose_node(const Node& n) {
  const Act a = act_input(n, 0);
  const std::size_t rank = a.shape.size();
  std::vector<std::int64_t> p = n.attr_ints("perm", {});
  if (p.empty())
    for (std::size_t i = rank; i-- > 0;) p.push_back(static_cast<std::int64_t>(i));
  if (p.size() != rank) throw Error(n.who() + ": perm does not match rank " + std::to_string(rank));
  // Only the labels change: IR memory stays where it is.
  std::vector<std::int64_t> inverse(rank, -1);
  Act out;
  out.op = a.op;
  for (std::size_t j = 0; j < rank; ++j) {
    const auto src = static_cast<std::size_t>(normalize_axis(p[j], rank, n.who()));
    if (inverse[src] >= 0) throw Error(n.who() + ": perm repeats an axis");
    inverse[src] = static_cast<std::int64_t>(j);
    out.shape.push_back(a.shape[src]);
  }
  for (auto x : a.perm) out.perm.push_back(inverse[static_cast<std::size_t>(x)]);
  set(n.outputs.at(0), out);
}

void Converter::slice(const Node& n) {
  Act a = act_input(n, 0);
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (opset_ < 10) {
    starts = n.attr_ints("starts", {});
    ends = n.attr_ints("ends", {});
    axes = n.attr_ints("axes", {});
  } else {
    starts = const_input(n, 1).ints();
    ends = const_input(n, 2).ints();
    if (auto x = optional_const(n, 3)) axes = x->ints();
    if (auto x = optional_const(n, 4)) steps = x->ints();
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw Error(n.who() + ": starts, ends, axes and steps differ in length");
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::int64_t axis = normalize_axis(axes[k], a.shape.size(), n.who());
    const auto idx = slice_indices(a.shape[static_cast<std::size_t>(axis)], starts[k], ends[k],
                                   steps[k], n.who());
    if (idx.empty()) throw Error(n.who() + ": empty slice");
    a = select(a, axis, idx, n.name);
  }
  set(n.outputs.at(0), a);
}

void Converter::gather(const Node& n) {
  if (is_const(n, 0))
    throw Error(n.who() + ": lookup in a constant table by an activation is not supported");
  const Act a = act_input(n, 0);
  const ConstTensor& idx = const_input(n, 1);
  const std::int64_t axis = normalize_axis(n.attr_int("axis", 0), a.shape.size(), n.who());
  if (idx.shape.size() > 1) throw Error(n.who() + ": only scalar or 1-D indices are supported");
  Act out = select(a, axis, idx.ints(), n.name);
  if (idx.shape.empty()) out = drop_axis(out, axis, n.name + "_squeeze");
  set(n.outputs.at(0), out);
}

void Converter::split(const Node& n) {
  const Act a = act_input(n, 0);
  const std::int64_t axis = normalize_axis(n.attr_int("axis", 0), a.shape.size(), n.who());
  const std::int64_t dim = a.shape[static_cast<std::size_t>(axis)];
  std::vector<std::int64_t> sizes =
      !n.input(1).empty() ? const_input(n, 1).ints() : n.attr_ints("split", {});
  if (sizes.empty()) {
    const auto parts = static_cast<std::int64_t>(n.outputs.size());
    const std::int64_t each = (dim + parts - 1) / parts;
    for (std::int64_t s = 0; s < dim; s += each) sizes.push_back(std::min(each, dim - s));
  }
  if (sizes.size() != n.outputs.size() ||
      std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0}) != dim)
    throw Error(n.who() + ": split sizes do not cover dimension " + std::to_string(dim));
  std::int64_t start = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::vector<std::int64_t> idx(static_cast<std::size_t>(sizes[i]));
    std::iota(idx.begin(), idx.end(), start);
    start += sizes[i];
    if (n.outputs[i].empty() || consumers(n.outputs[i]).empty()) {
      if (!graph_outputs_.count(n.outputs[i])) continue;
    }
    set(n.outputs[i], select(a, axis, idx, n.name + "_" + std::to_string(i)));
  }
}

void Converter::passthrough(const Node& n) {
  if (n.type == "Cast") {
    const std::int64_t to = n.attr_int("to", 1);
    if (to != 1 && to != 10 && to != 11)
      throw Error(n.who() + ": cast of an activation to a non-float type is not supported");
  }
  if (n.type == "Dropout")
    for (std::size_t i = 1; i < n.outputs.size(); ++i)
      if (!n.outputs[i].empty() && !consumers(n.outputs[i]).empty())
        throw Error(n.who() + ": the mask output is not supported");
  set(n.outputs.at(0), value(n, 0));
}

void Converter::expand(const Node& n) {
  const Act a = act_input(n, 0);
  const Shape target = broadcast_shapes(a.shape, const_input(n, 1).ints(), n.who());
  if (target != a.shape)
    throw Error(n.who() + ": expanding an activation from " + shape_text(a.shape) + " to " +
                shape_text(target) + " is not supported");
  set(n.outputs.at(0), a);
}

void Converter::shape_of(const Node& n) {
  const Val& v = value(n, 0);
  Shape shape =
      std::holds_alternative<Act>(v) ? std::get<Act>(v).shape : std::get<ConstTensor>(v).shape;
  const auto rank = static_cast<std::int64_t>(shape.size());
  std::int64_t start = n.attr_int("start", 0), end = n.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank);
  end = std::clamp<std::int64_t>(end, start, rank);
  set(n.outputs.at(0), make_ints(Shape(shape.begin() + start, shape.begin() + end)));
}

}  // namespace dpushard::onnximport
