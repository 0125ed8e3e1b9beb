#include "const_fold.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <string>

#include "dpushard/base/error.hpp"

namespace dpushard::onnximport {
namespace {

using Inputs = std::vector<const ConstTensor*>;

const ConstTensor& in(const Node& n, const Inputs& inputs, std::size_t i) {
  if (i >= inputs.size() || inputs[i] == nullptr)
    throw Error(n.who() + ": missing input #" + std::to_string(i));
  return *inputs[i];
}

bool has(const Inputs& inputs, std::size_t i) { return i < inputs.size() && inputs[i] != nullptr; }

// Axes from the attribute (older opsets) or the input `index` (newer ones).
std::vector<std::int64_t> axes_of(const Node& n, const Inputs& inputs, std::size_t index) {
  if (has(inputs, index)) return inputs[index]->ints();
  return n.attr_ints("axes", {});
}

ConstTensor unary(const ConstTensor& t, const std::function<double(double)>& f) {
  ConstTensor out = t;
  for (auto& v : out.values) v = f(v);
  return out;
}

ConstTensor concat(const Node& n, const Inputs& inputs) {
  std::vector<const ConstTensor*> parts;
  for (const auto* p : inputs)
    if (p != nullptr && p->count() > 0) parts.push_back(p);
  if (parts.empty()) return inputs.empty() || !inputs[0] ? ConstTensor{} : *inputs[0];
  const Shape& first = parts[0]->shape;
  const auto axis =
      static_cast<std::size_t>(normalize_axis(n.attr_int("axis", 0), first.size(), n.who()));
  ConstTensor out;
  out.shape = first;
  out.shape[axis] = 0;
  out.integer = true;
  for (const auto* p : parts) {
    if (p->shape.size() != first.size()) throw Error(n.who() + ": inputs of different rank");
    out.shape[axis] += p->shape[axis];
    out.integer = out.integer && p->integer;
  }
  std::int64_t outer = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= first[i];
  for (std::int64_t o = 0; o < outer; ++o)
    for (const auto* p : parts) {
      const std::int64_t block = p->count() / outer;
      out.values.insert(out.values.end(), p->values.begin() + o * block,
                        p->values.begin() + (o + 1) * block);
    }
  return out;
}

ConstTensor slice(const Node& n, const Inputs& inputs, std::int64_t opset) {
  const ConstTensor& data = in(n, inputs, 0);
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (opset < 10) {
    starts = n.attr_ints("starts", {});
    ends = n.attr_ints("ends", {});
    axes = n.attr_ints("axes", {});
  } else {
    starts = in(n, inputs, 1).ints();
    ends = in(n, inputs, 2).ints();
    if (has(inputs, 3)) axes = inputs[3]->ints();
    if (has(inputs, 4)) steps = inputs[4]->ints();
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  ConstTensor out = data;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::int64_t axis = normalize_axis(axes[k], out.shape.size(), n.who());
    auto idx = slice_indices(out.shape[static_cast<std::size_t>(axis)], starts[k], ends[k],
                             steps[k], n.who());
    out = take(out, axis, idx);
  }
  return out;
}

}  // namespace

Shape reshape_target(const Node& n, const Shape& in_shape, std::vector<std::int64_t> target) {
  const bool allow_zero = n.attr_int("allowzero", 0) != 0;
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      if (i >= in_shape.size()) throw Error(n.who() + ": 0 in shape beyond the input rank");
      target[i] = in_shape[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) throw Error(n.who() + ": more than one -1 in the target shape");
      infer = static_cast<int>(i);
    } else {
      known *= target[i];
    }
  }
  const std::int64_t total = element_count(in_shape);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      throw Error(n.who() + ": cannot reshape " + shape_text(in_shape) + " to " +
                  shape_text(target));
    target[static_cast<std::size_t>(infer)] = total / known;
  }
  if (element_count(target) != total)
    throw Error(n.who() + ": cannot reshape " + shape_text(in_shape) + " to " + shape_text(target));
  return target;
}

std::vector<std::int64_t> slice_indices(std::int64_t dim, std::int64_t start, std::int64_t end,
                                        std::int64_t step, const std::string& who) {
  if (step == 0) throw Error(who + ": slice step 0");
  auto clampi = [](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    return std::max(lo, std::min(hi, v));
  };
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  std::vector<std::int64_t> out;
  if (step > 0) {
    start = clampi(start, 0, dim);
    end = clampi(end, 0, dim);
    for (std::int64_t i = start; i < end; i += step) out.push_back(i);
  } else {
    start = clampi(start, -1, dim - 1);
    end = clampi(end, -1, dim - 1);
    for (std::int64_t i = start; i > end; i += step) out.push_back(i);
  }
  return out;
}

namespace {

// One folding rule per ONNX op type; `fold_rules()` is also the list of foldable types.
using Outputs = std::vector<ConstTensor>;
using FoldRule = std::function<Outputs(const Node&, const Inputs&, std::int64_t opset)>;

Outputs fold_constant(const Node& n, const Inputs&, std::int64_t) {
  if (n.has("value")) return {n.attr_tensor("value")};
  if (n.has("value_float")) return {make_scalar(n.attr_float("value_float", 0), false)};
  if (n.has("value_int"))
    return {make_scalar(static_cast<double>(n.attr_int("value_int", 0)), true)};
  if (n.has("value_ints")) return {make_ints(n.attr_ints("value_ints", {}))};
  if (n.has("value_floats")) {
    const auto& v = std::get<std::vector<double>>(n.attrs.at("value_floats"));
    return {ConstTensor{{static_cast<std::int64_t>(v.size())}, v, false}};
  }
  throw Error(n.who() + ": unsupported Constant value kind");
}

Outputs fold_identity(const Node& n, const Inputs& inputs, std::int64_t) {
  return {in(n, inputs, 0)};
}

Outputs fold_cast(const Node& n, const Inputs& inputs, std::int64_t) {
  ConstTensor out = in(n, inputs, 0);
  const std::int64_t to = n.attr_int("to", 1);
  const bool integer = to == 6 || to == 7 || to == 9 || to == 2 || to == 3 || to == 5;
  if (integer && !out.integer)
    for (auto& v : out.values) v = std::trunc(v);
  if (to == 9)
    for (auto& v : out.values) v = v != 0.0 ? 1.0 : 0.0;
  out.integer = integer;
  return {out};
}

Outputs fold_gather(const Node& n, const Inputs& inputs, std::int64_t) {
  const ConstTensor& data = in(n, inputs, 0);
  const ConstTensor& idx = in(n, inputs, 1);
  const auto axis = normalize_axis(n.attr_int("axis", 0), data.shape.size(), n.who());
  ConstTensor out = take(data, axis, idx.ints());
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), idx.shape.begin(), idx.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  out.shape = shape;
  return {out};
}

Outputs fold_unsqueeze(const Node& n, const Inputs& inputs, std::int64_t) {
  ConstTensor out = in(n, inputs, 0);
  auto axes = axes_of(n, inputs, 1);
  const std::size_t rank = out.shape.size() + axes.size();
  for (auto& a : axes) a = normalize_axis(a, rank, n.who());
  std::sort(axes.begin(), axes.end());
  for (auto a : axes) out.shape.insert(out.shape.begin() + a, 1);
  return {out};
}

Outputs fold_squeeze(const Node& n, const Inputs& inputs, std::int64_t) {
  ConstTensor out = in(n, inputs, 0);
  auto axes = axes_of(n, inputs, 1);
  Shape shape;
  for (std::size_t i = 0; i < out.shape.size(); ++i) {
    bool drop = axes.empty() ? out.shape[i] == 1 : false;
    for (auto a : axes)
      if (normalize_axis(a, out.shape.size(), n.who()) == static_cast<std::int64_t>(i)) drop = true;
    if (!drop) shape.push_back(out.shape[i]);
  }
  out.shape = shape;
  return {out};
}

Outputs fold_concat(const Node& n, const Inputs& inputs, std::int64_t) {
  return {concat(n, inputs)};
}

Outputs fold_slice(const Node& n, const Inputs& inputs, std::int64_t opset) {
  return {slice(n, inputs, opset)};
}

Outputs fold_reshape(const Node& n, const Inputs& inputs, std::int64_t) {
  ConstTensor out = in(n, inputs, 0);
  out.shape = reshape_target(n, out.shape, in(n, inputs, 1).ints());
  return {out};
}

Outputs fold_flatten(const Node& n, const Inputs& inputs, std::int64_t) {
  ConstTensor out = in(n, inputs, 0);
  const auto axis = n.attr_int("axis", 1);
  const auto a = axis < 0 ? axis + static_cast<std::int64_t>(out.shape.size()) : axis;
  std::int64_t outer = 1;
  for (std::int64_t i = 0; i < a; ++i) outer *= out.shape[static_cast<std::size_t>(i)];
  out.shape = {outer, out.count() / std::max<std::int64_t>(outer, 1)};
  return {out};
}

Outputs fold_transpose(const Node& n, const Inputs& inputs, std::int64_t) {
  const ConstTensor& x = in(n, inputs, 0);
  std::vector<std::int64_t> perm = n.attr_ints("perm", {});
  if (perm.empty())
    for (std::size_t i = x.shape.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  return {transpose(x, perm)};
}

Outputs fold_split(const Node& n, const Inputs& inputs, std::int64_t) {
  const ConstTensor& x = in(n, inputs, 0);
  const auto axis = normalize_axis(n.attr_int("axis", 0), x.shape.size(), n.who());
  std::vector<std::int64_t> sizes = has(inputs, 1) ? inputs[1]->ints() : n.attr_ints("split", {});
  const std::int64_t dim = x.shape[static_cast<std::size_t>(axis)];
  if (sizes.empty()) {
    const auto parts = static_cast<std::int64_t>(n.outputs.size());
    const std::int64_t each = (dim + parts - 1) / parts;
    for (std::int64_t s = 0; s < dim; s += each) sizes.push_back(std::min(each, dim - s));
  }
  Outputs outs;
  std::int64_t start = 0;
  for (auto s : sizes) {
    std::vector<std::int64_t> idx(static_cast<std::size_t>(s));
    std::iota(idx.begin(), idx.end(), start);
    outs.push_back(take(x, axis, idx));
    start += s;
  }
  return outs;
}

// An elementwise binary op over all inputs, left to right, with broadcasting.
FoldRule binary_rule(std::function<double(double, double)> f, bool yields_integer) {
  return [f = std::move(f), yields_integer](const Node& n, const Inputs& inputs, std::int64_t) {
    ConstTensor out = in(n, inputs, 0);
    for (std::size_t i = 1; i < inputs.size(); ++i) out = binary(out, in(n, inputs, i), n.who(), f);
    if (yields_integer) out.integer = true;
    return Outputs{out};
  };
}

FoldRule unary_rule(std::function<double(double)> f) {
  return [f = std::move(f)](const Node& n, const Inputs& inputs, std::int64_t) {
    return Outputs{unary(in(n, inputs, 0), f)};
  };
}

Outputs fold_div(const Node& n, const Inputs& inputs, std::int64_t) {
  const ConstTensor& a = in(n, inputs, 0);
  const ConstTensor& b = in(n, inputs, 1);
  const bool integer = a.integer && b.integer;
  return {binary(a, b, n.who(), [integer](double x, double y) {
    if (integer) return y == 0.0 ? 0.0 : std::trunc(x / y);
    return x / y;
  })};
}

Outputs fold_where(const Node& n, const Inputs& inputs, std::int64_t) {
  const std::string who = n.who();
  const ConstTensor& c = in(n, inputs, 0);
  const ConstTensor& x = in(n, inputs, 1);
  const ConstTensor& y = in(n, inputs, 2);
  const Shape shape = broadcast_shapes(broadcast_shapes(c.shape, x.shape, who), y.shape, who);
  const ConstTensor cb = broadcast_to(c, shape, who), xb = broadcast_to(x, shape, who),
                    yb = broadcast_to(y, shape, who);
  ConstTensor out{shape, std::vector<double>(cb.values.size()), x.integer && y.integer};
  for (std::size_t i = 0; i < out.values.size(); ++i)
    out.values[i] = cb.values[i] != 0.0 ? xb.values[i] : yb.values[i];
  return {out};
}

Outputs fold_constant_of_shape(const Node& n, const Inputs& inputs, std::int64_t) {
  const auto shape = in(n, inputs, 0).ints();
  ConstTensor value = n.has("value") ? n.attr_tensor("value") : make_scalar(0.0, false);
  ConstTensor out;
  out.shape = shape;
  out.integer = value.integer;
  out.values.assign(static_cast<std::size_t>(element_count(shape)), value.values.at(0));
  return {out};
}

Outputs fold_expand(const Node& n, const Inputs& inputs, std::int64_t) {
  const ConstTensor& x = in(n, inputs, 0);
  const Shape shape = broadcast_shapes(x.shape, in(n, inputs, 1).ints(), n.who());
  return {broadcast_to(x, shape, n.who())};
}

Outputs fold_range(const Node& n, const Inputs& inputs, std::int64_t) {
  const std::string who = n.who();
  const double start = in(n, inputs, 0).scalar(who), limit = in(n, inputs, 1).scalar(who),
               delta = in(n, inputs, 2).scalar(who);
  if (delta == 0.0) throw Error(who + ": delta 0");
  ConstTensor out;
  out.integer = in(n, inputs, 0).integer;
  for (double v = start; delta > 0 ? v < limit : v > limit; v += delta) out.values.push_back(v);
  out.shape = {static_cast<std::int64_t>(out.values.size())};
  return {out};
}

Outputs fold_reduce_prod(const Node& n, const Inputs& inputs, std::int64_t) {
  const ConstTensor& x = in(n, inputs, 0);
  if (!axes_of(n, inputs, 1).empty() && x.shape.size() != 1)
    throw Error(n.who() + ": only whole-tensor ReduceProd of constants is supported");
  double p = 1.0;
  for (double v : x.values) p *= v;
  ConstTensor out = make_scalar(p, x.integer);
  if (n.attr_int("keepdims", 1)) out.shape = Shape(x.shape.size(), 1);
  return {out};
}

Outputs fold_size(const Node& n, const Inputs& inputs, std::int64_t) {
  return {make_scalar(static_cast<double>(in(n, inputs, 0).count()), true)};
}

const std::map<std::string, FoldRule, std::less<>>& fold_rules() {
  static const std::map<std::string, FoldRule, std::less<>> kRules = {
      {"Constant", fold_constant},
      {"Identity", fold_identity},
      {"Dropout", fold_identity},
      {"Cast", fold_cast},
      {"Gather", fold_gather},
      {"Unsqueeze", fold_unsqueeze},
      {"Squeeze", fold_squeeze},
      {"Concat", fold_concat},
      {"Slice", fold_slice},
      {"Reshape", fold_reshape},
      {"Flatten", fold_flatten},
      {"Transpose", fold_transpose},
      {"Split", fold_split},
      {"Add", binary_rule(std::plus<>(), false)},
      {"Sub", binary_rule(std::minus<>(), false)},
      {"Mul", binary_rule(std::multiplies<>(), false)},
      {"Pow", binary_rule([](double a, double b) { return std::pow(a, b); }, false)},
      {"Equal", binary_rule([](double a, double b) { return a == b ? 1.0 : 0.0; }, true)},
      {"Less", binary_rule([](double a, double b) { return a < b ? 1.0 : 0.0; }, true)},
      {"Greater", binary_rule([](double a, double b) { return a > b ? 1.0 : 0.0; }, true)},
      {"Min", binary_rule([](double a, double b) { return std::min(a, b); }, false)},
      {"Max", binary_rule([](double a, double b) { return std::max(a, b); }, false)},
      {"Div", fold_div},
      {"Sqrt", unary_rule([](double x) { return std::sqrt(x); })},
      {"Neg", unary_rule([](double x) { return -x; })},
      {"Floor", unary_rule([](double x) { return std::floor(x); })},
      {"Ceil", unary_rule([](double x) { return std::ceil(x); })},
      {"Not", unary_rule([](double x) { return x == 0.0 ? 1.0 : 0.0; })},
      {"Relu", unary_rule([](double x) { return std::max(x, 0.0); })},
      {"Abs", unary_rule([](double x) { return std::fabs(x); })},
      {"Reciprocal", unary_rule([](double x) { return 1.0 / x; })},
      {"Exp", unary_rule([](double x) { return std::exp(x); })},
      {"Sigmoid", unary_rule([](double x) { return 1.0 / (1.0 + std::exp(-x)); })},
      {"Erf", unary_rule([](double x) { return std::erf(x); })},
      {"Tanh", unary_rule([](double x) { return std::tanh(x); })},
      {"Where", fold_where},
      {"ConstantOfShape", fold_constant_of_shape},
      {"Expand", fold_expand},
      {"Range", fold_range},
      {"ReduceProd", fold_reduce_prod},
      {"Size", fold_size},
  };
  return kRules;
}

}  // namespace

bool is_foldable_type(std::string_view type) { return fold_rules().count(type) != 0; }

std::vector<ConstTensor> fold_node(const Node& n, const Inputs& inputs, std::int64_t opset) {
  const auto& rules = fold_rules();
  const auto rule = rules.find(n.type);
  if (rule == rules.end()) throw Error(n.who() + ": cannot fold");
  return rule->second(n, inputs, opset);
}

}  // namespace dpushard::onnximport
