// Elementwise arithmetic, activations, softmax, layer norm and concat.
#include <algorithm>
#include <cmath>
#include <limits>

#include "converter.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard::onnximport {
namespace {

bool all_equal(const ConstTensor& c, double v) {
  return std::all_of(c.values.begin(), c.values.end(), [v](double x) { return x == v; });
}

std::int64_t ir_axis(const Act& a, std::int64_t onnx_axis) {
  return std::find(a.perm.begin(), a.perm.end(), onnx_axis) - a.perm.begin();
}

}  // namespace

void Converter::add_sub(const Node& n) {
  const bool sub = n.type == "Sub";
  if (!is_const(n, 0) && !is_const(n, 1)) {
    Act a = act_input(n, 0), b = act_input(n, 1);
    if (a.shape.size() != b.shape.size()) {
      a = to_identity(a, n.name + "_a");
      b = to_identity(b, n.name + "_b");
    } else {
      b = to_layout(b, a.perm, n.name + "_b");
    }
    std::string b_op = b.op;
    if (sub) {
      const std::string minus = w_.constant(n.name + "_minus_one", {1}, {-1.0f});
      b_op = w_.op(n.name + "_neg", "mul", {{"input", {b.op, minus}}});
    }
    const std::string op = w_.op(n.name, "add", {{"input", {a.op, b_op}}});
    set_act(n, op, broadcast_shapes(a.shape, b.shape, n.who()), a.perm);
    return;
  }
  const bool const_first = is_const(n, 0);
  if (sub && const_first) throw Error(n.who() + ": constant minus activation is not supported");
  const Act a = act_input(n, const_first ? 1 : 0);
  ConstTensor c = const_input(n, const_first ? 0 : 1);
  if (sub)
    for (auto& v : c.values) v = -v;
  if (broadcast_shapes(a.shape, c.shape, n.who()) != a.shape)
    throw Error(n.who() + ": constant of shape " + shape_text(c.shape) +
                " would broadcast the activation " + shape_text(a.shape));
  if (all_equal(c, 0.0)) {
    set(n.outputs.at(0), a);
    return;
  }
  // The DPU adds tensors of equal shapes: expand the constant to the activation's.
  const ConstTensor full = broadcast_to(const_in_layout(c, a, n.who()), a.ir_shape(), n.who());
  const std::string k = ir_const(n.name + "_const", full);
  set_act(n, w_.op(n.name, "add", {{"input", {a.op, k}}}), a.shape, a.perm);
}

void Converter::mul_div(const Node& n) {
  const bool div = n.type == "Div";
  if (!is_const(n, 0) && !is_const(n, 1)) {
    if (div) throw Error(n.who() + ": division by an activation is not supported");
    Act a = act_input(n, 0), b = act_input(n, 1);
    if (a.shape.size() != b.shape.size()) {
      a = to_identity(a, n.name + "_a");
      b = to_identity(b, n.name + "_b");
    } else {
      b = to_layout(b, a.perm, n.name + "_b");
    }
    // Keep the full-size operand first, the broadcast one second.
    if (element_count(b.shape) > element_count(a.shape)) std::swap(a, b);
    const std::string op = w_.op(n.name, "mul", {{"input", {a.op, b.op}}});
    set_act(n, op, broadcast_shapes(a.shape, b.shape, n.who()), a.perm);
    return;
  }
  const bool const_first = is_const(n, 0);
  if (div && const_first)
    throw Error(n.who() + ": constant divided by activation is not supported");
  const Act a = act_input(n, const_first ? 1 : 0);
  ConstTensor c = const_input(n, const_first ? 0 : 1);
  if (div)
    for (auto& v : c.values) v = 1.0 / v;
  if (broadcast_shapes(a.shape, c.shape, n.who()) != a.shape)
    throw Error(n.who() + ": constant of shape " + shape_text(c.shape) +
                " would broadcast the activation " + shape_text(a.shape));
  if (all_equal(c, 1.0)) {
    set(n.outputs.at(0), a);
    return;
  }
  ConstTensor k = const_in_layout(c, a, n.who());
  // The IR's mul broadcasts a scalar or a per-channel [C] operand most simply.
  if (k.count() == 1) {
    k.shape = {1};
  } else if (std::all_of(k.shape.begin(), k.shape.end() - 1,
                         [](std::int64_t d) { return d == 1; })) {
    k.shape = {k.shape.back()};
  }
  const std::string kc = ir_const(n.name + "_const", k);
  set_act(n, w_.op(n.name, "mul", {{"input", {a.op, kc}}}), a.shape, a.perm);
}

void Converter::unary(const Node& n) {
  const Act a = act_input(n, 0);
  static const std::map<std::string, std::string> kTypes = {{"Relu", "relu"},
                                                            {"Sigmoid", "sigmoid"},
                                                            {"Tanh", "tanh"},
                                                            {"HardSwish", "hard-swish"},
                                                            {"Gelu", "gelu"}};
  if (n.type == "Gelu" && n.attr_string("approximate", "none") != "none")
    throw Error(n.who() + ": only the erf form of Gelu is supported");
  set_act(n, w_.op(n.name, kTypes.at(n.type), {{"input", {a.op}}}), a.shape, a.perm);
}

void Converter::clip(const Node& n) {
  const Act a = act_input(n, 0);
  double lo = -std::numeric_limits<double>::infinity(),
         hi = std::numeric_limits<double>::infinity();
  if (opset_ >= 11) {
    if (!n.input(1).empty()) lo = const_input(n, 1).scalar(n.who());
    if (!n.input(2).empty()) hi = const_input(n, 2).scalar(n.who());
  } else {
    lo = n.attr_float("min", lo);
    hi = n.attr_float("max", hi);
  }
  std::string type;
  if (lo == 0.0 && hi == 6.0)
    type = "relu6";
  else if (lo == 0.0 && std::isinf(hi))
    type = "relu";
  else
    throw Error(n.who() + ": only Clip(0, 6) and Clip(0, inf) are supported, got Clip(" +
                std::to_string(lo) + ", " + std::to_string(hi) + ")");
  set_act(n, w_.op(n.name, type, {{"input", {a.op}}}), a.shape, a.perm);
}

void Converter::leaky_relu(const Node& n) {
  const Act a = act_input(n, 0);
  const auto alpha = static_cast<float>(n.attr_float("alpha", 0.01));
  set_act(n, w_.op(n.name, "leaky-relu", {{"input", {a.op}}}, {{"alpha", alpha}}), a.shape, a.perm);
}

void Converter::hard_sigmoid(const Node& n) {
  const Act a = act_input(n, 0);
  if (std::fabs(n.attr_float("alpha", 0.2) - 1.0 / 6.0) > 1e-6 ||
      std::fabs(n.attr_float("beta", 0.5) - 0.5) > 1e-6)
    throw Error(n.who() + ": only HardSigmoid with alpha 1/6 and beta 0.5 is supported");
  set_act(n, w_.op(n.name, "hard-sigmoid", {{"input", {a.op}}}), a.shape, a.perm);
}

void Converter::softmax(const Node& n) {
  const Act a = act_input(n, 0);
  const std::size_t rank = a.shape.size();
  const std::int64_t axis = normalize_axis(n.attr_int("axis", opset_ < 13 ? 1 : -1), rank, n.who());
  if (opset_ < 13)
    for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < rank; ++i)
      if (a.shape[i] != 1)
        throw Error(n.who() + ": opset " + std::to_string(opset_) +
                    " Softmax over several axes is not supported");
  const std::string op = w_.op(n.name, "softmax", {{"input", {a.op}}},
                               {{"axis", static_cast<std::int32_t>(ir_axis(a, axis))}});
  set_act(n, op, a.shape, a.perm);
}

void Converter::layer_norm(const Node& n) {
  Act a = act_input(n, 0);
  const std::size_t rank = a.shape.size();
  if (normalize_axis(n.attr_int("axis", -1), rank, n.who()) != static_cast<std::int64_t>(rank) - 1)
    throw Error(n.who() + ": only normalization over the last axis is supported");
  for (std::size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty() && !consumers(n.outputs[i]).empty())
      throw Error(n.who() + ": the Mean and InvStdDev outputs are not supported");
  if (a.perm.back() != static_cast<std::int64_t>(rank) - 1) a = to_identity(a, n.name);
  const std::int64_t d = a.shape.back();
  auto param = [&](std::size_t i, double fallback) {
    if (n.input(i).empty())
      return ConstTensor{{d}, std::vector<double>(static_cast<std::size_t>(d), fallback), false};
    ConstTensor c = broadcast_to(const_input(n, i), {d}, n.who());
    return c;
  };
  const std::string gamma = ir_const(n.name + "_gamma", param(1, 1.0));
  const std::string beta = ir_const(n.name + "_beta", param(2, 0.0));
  const std::string op = w_.op(
      n.name, "layernorm", {{"input", {a.op}}, {"gamma", {gamma}}, {"beta", {beta}}},
      {{"axis", std::int32_t{-1}}, {"epsilon", static_cast<float>(n.attr_float("epsilon", 1e-5))}});
  set_act(n, op, a.shape, a.perm);
}

void Converter::concat(const Node& n) {
  const Act* first = nullptr;
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    if (!is_const(n, i)) {
      first = &std::get<Act>(value(n, i));
      break;
    }
  const Perm perm = first->perm;
  const std::size_t rank = perm.size();
  const std::int64_t axis = normalize_axis(n.attr_int("axis", 0), rank, n.who());
  OpArg in{"input", {}};
  Shape shape = first->shape;
  shape[static_cast<std::size_t>(axis)] = 0;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    Shape part;
    if (is_const(n, i)) {
      const ConstTensor& c = const_input(n, i);
      if (c.count() == 0) continue;
      if (c.shape.size() != rank) throw Error(n.who() + ": inputs of different rank");
      in.producers.push_back(ir_const(n.name + "_const", transpose(c, perm)));
      part = c.shape;
    } else {
      const Act a = to_layout(act_input(n, i), perm, n.name + "_in" + std::to_string(i));
      if (a.shape.size() != rank) throw Error(n.who() + ": inputs of different rank");
      in.producers.push_back(a.op);
      part = a.shape;
    }
    shape[static_cast<std::size_t>(axis)] += part[static_cast<std::size_t>(axis)];
  }
  Act tmp;
  tmp.perm = perm;
  tmp.shape = shape;
  const std::string op =
      w_.op(n.name, "concat", {in}, {{"axis", static_cast<std::int32_t>(ir_axis(tmp, axis))}});
  set_act(n, op, shape, perm);
}

}  // namespace dpushard::onnximport
