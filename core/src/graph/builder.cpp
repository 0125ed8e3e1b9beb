#include "dpushard/graph/builder.hpp"

#include <cmath>

#include "dpushard/graph/shape.hpp"

namespace dpushard {
namespace {

std::vector<std::int32_t> i32(std::initializer_list<std::int64_t> values) {
  std::vector<std::int32_t> out;
  for (auto v : values) out.push_back(static_cast<std::int32_t>(v));
  return out;
}

std::vector<std::int32_t> i32(const std::vector<std::int64_t>& values) {
  std::vector<std::int32_t> out;
  for (auto v : values) out.push_back(static_cast<std::int32_t>(v));
  return out;
}

Op make_op(const std::string& name, const std::string& type, std::vector<OpArg> args,
           AttrMap attrs = {}) {
  Op op;
  op.name = name;
  op.type = type;
  op.args = std::move(args);
  op.attrs = std::move(attrs);
  op.output.name = name;
  op.output.data_type = DataType::Float;
  op.output.bit_width = 32;
  return op;
}

AttrMap window_attrs(const std::array<std::int64_t, 2>& kernel,
                     const std::array<std::int64_t, 2>& stride,
                     const std::array<std::int64_t, 4>& pad) {
  // XIR orders kernel and stride {width, height}; the builder takes {height, width}.
  return {{"kernel", i32({kernel[1], kernel[0]})},
          {"stride", i32({stride[1], stride[0]})},
          {"pad", i32({pad[0], pad[1], pad[2], pad[3]})},
          {"pad_mode", std::string("FLOOR")}};
}

}  // namespace

std::string_view nonlinear_op_type(Nonlinear nl) {
  switch (nl) {
    case Nonlinear::Relu:
      return "relu";
    case Nonlinear::Relu6:
      return "relu6";
    case Nonlinear::LeakyRelu:
      return "leaky-relu";
    case Nonlinear::HardSigmoid:
      return "hard-sigmoid";
    case Nonlinear::HardSwish:
      return "hard-swish";
    case Nonlinear::None:
      break;
  }
  return "";
}

Op make_fix_op(const std::string& name, const std::string& input, int fix_point, RoundMode mode) {
  return make_op(name, "fix", {{"input", {input}}},
                 {{"fix_point", std::int32_t{fix_point}},
                  {"bit_width", std::int32_t{8}},
                  {"if_signed", true},
                  {"round_mode", std::string(round_mode_name(mode))}});
}

GraphBuilder::GraphBuilder(std::string graph_name) : graph_(std::move(graph_name)) {}

Value GraphBuilder::value_of(const std::string& op_name, int fp) const {
  return {op_name, graph_.op(op_name).output.shape, fp};
}

Value GraphBuilder::add_fixed(Op op, int out_fp, RoundMode mode) {
  op.output.shape = infer_output_shape(graph_, op);
  const std::string name = op.name;
  const std::vector<std::int64_t> shape = op.output.shape;
  graph_.add_op(std::move(op));
  Op fix_op = make_fix_op(name + "_fix", name, out_fp, mode);
  fix_op.output.shape = shape;
  graph_.add_op(std::move(fix_op));
  return {name + "_fix", shape, out_fp};
}

Value GraphBuilder::fix(const std::string& name, const Value& x, int fp) {
  Op op = make_fix_op(name, x.op, fp);
  op.output.shape = x.shape;
  graph_.add_op(std::move(op));
  return {name, x.shape, fp};
}

Value GraphBuilder::input(const std::string& name, std::vector<std::int64_t> shape, int fix_point) {
  Op op = make_op(name, "data", {}, {{"shape", i32(shape)}, {"data_type", std::string("FLOAT32")}});
  return add_fixed(std::move(op), fix_point);
}

Value GraphBuilder::constant(const std::string& name, std::vector<std::int64_t> shape,
                             const std::vector<std::int8_t>& q, int fix_point) {
  Op op =
      make_op(name, "const", {}, {{"shape", i32(shape)}, {"data_type", std::string("float32")}});
  // Scaling an int8 by a power of two is exact in float32, so one multiply per value.
  const float scale = std::ldexp(1.0f, -fix_point);
  std::vector<float> values(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) values[i] = static_cast<float>(q[i]) * scale;
  set_const_values(op, values);
  return add_fixed(std::move(op), fix_point);
}

Value GraphBuilder::shaped_constant(const std::string& name, std::vector<std::int64_t> shape,
                                    int fix_point) {
  Op op =
      make_op(name, "const", {}, {{"shape", i32(shape)}, {"data_type", std::string("float32")}});
  mark_weights_omitted(graph_);
  return add_fixed(std::move(op), fix_point);
}

namespace {

// Appends `producer -> nonlinear` and returns the name the fix must consume.
std::string with_nonlinear(Graph& g, const std::string& producer, Nonlinear nl) {
  if (nl == Nonlinear::None) return producer;
  const std::string name = producer + "_" + std::string(nonlinear_op_type(nl));
  Op op = make_op(name, std::string(nonlinear_op_type(nl)), {{"input", {producer}}});
  if (nl == Nonlinear::LeakyRelu) op.attrs["alpha"] = 0.1f;
  op.output.shape = g.op(producer).output.shape;
  g.add_op(std::move(op));
  return name;
}

}  // namespace

Value GraphBuilder::conv2d(const std::string& name, const Value& x, const Value& weights,
                           const std::optional<Value>& bias, const Conv2dSpec& spec, int out_fp) {
  std::vector<OpArg> args = {{"input", {x.op}}, {"weights", {weights.op}}};
  if (bias) args.push_back({"bias", {bias->op}});
  AttrMap attrs = window_attrs(spec.kernel, spec.stride, spec.pad);
  attrs["dilation"] = i32({spec.dilation[1], spec.dilation[0]});
  attrs["group"] = static_cast<std::int32_t>(spec.group);
  attrs["bias_term"] = bias.has_value();
  attrs["in_dim"] = static_cast<std::int32_t>(x.shape.back());
  attrs["out_dim"] = static_cast<std::int32_t>(weights.shape.front());
  Op op = make_op(name, "conv2d", std::move(args), std::move(attrs));
  op.output.shape = infer_output_shape(graph_, op);
  graph_.add_op(std::move(op));
  const std::string last = with_nonlinear(graph_, name, spec.nonlinear);
  return fix(name + "_fix", value_of(last, out_fp), out_fp);
}

Value GraphBuilder::depthwise_conv2d(const std::string& name, const Value& x, const Value& weights,
                                     const std::optional<Value>& bias, const Conv2dSpec& spec,
                                     int out_fp) {
  std::vector<OpArg> args = {{"input", {x.op}}, {"weights", {weights.op}}};
  if (bias) args.push_back({"bias", {bias->op}});
  AttrMap attrs = window_attrs(spec.kernel, spec.stride, spec.pad);
  attrs["dilation"] = i32({spec.dilation[1], spec.dilation[0]});
  attrs["bias_term"] = bias.has_value();
  attrs["in_dim"] = static_cast<std::int32_t>(x.shape.back());
  attrs["out_dim"] = static_cast<std::int32_t>(x.shape.back() * weights.shape.front());
  Op op = make_op(name, "depthwise-conv2d", std::move(args), std::move(attrs));
  op.output.shape = infer_output_shape(graph_, op);
  graph_.add_op(std::move(op));
  const std::string last = with_nonlinear(graph_, name, spec.nonlinear);
  return fix(name + "_fix", value_of(last, out_fp), out_fp);
}

Value GraphBuilder::matmul(const std::string& name, const Value& a, const Value& b,
                           const std::optional<Value>& bias, bool transpose_b, int out_fp,
                           Nonlinear nonlinear) {
  std::vector<OpArg> args = {{"input", {a.op, b.op}}};
  if (bias) args.push_back({"bias", {bias->op}});
  Op op = make_op(name, "matmul", std::move(args),
                  {{"transpose_a", false}, {"transpose_b", transpose_b}});
  op.output.shape = infer_output_shape(graph_, op);
  graph_.add_op(std::move(op));
  const std::string last = with_nonlinear(graph_, name, nonlinear);
  return fix(name + "_fix", value_of(last, out_fp), out_fp);
}

Value GraphBuilder::add(const std::string& name, const std::vector<Value>& xs, int out_fp,
                        Nonlinear nonlinear) {
  OpArg in{"input", {}};
  for (const auto& x : xs) in.producers.push_back(x.op);
  Op op = make_op(name, "add", {in});
  op.output.shape = infer_output_shape(graph_, op);
  graph_.add_op(std::move(op));
  const std::string last = with_nonlinear(graph_, name, nonlinear);
  return fix(name + "_fix", value_of(last, out_fp), out_fp);
}

Value GraphBuilder::mul(const std::string& name, const Value& a, const Value& b, int out_fp) {
  return add_fixed(make_op(name, "mul", {{"input", {a.op, b.op}}}), out_fp);
}

Value GraphBuilder::relu(const std::string& name, const Value& x, int out_fp) {
  return add_fixed(make_op(name, "relu", {{"input", {x.op}}}), out_fp);
}

Value GraphBuilder::relu6(const std::string& name, const Value& x, int out_fp) {
  return add_fixed(make_op(name, "relu6", {{"input", {x.op}}}), out_fp);
}

Value GraphBuilder::leaky_relu(const std::string& name, const Value& x, double alpha, int out_fp) {
  return add_fixed(
      make_op(name, "leaky-relu", {{"input", {x.op}}}, {{"alpha", static_cast<float>(alpha)}}),
      out_fp);
}

Value GraphBuilder::maxpool2d(const std::string& name, const Value& x, const Pool2dSpec& spec) {
  auto kernel = spec.kernel;
  if (spec.global) kernel = {x.shape[1], x.shape[2]};
  AttrMap attrs = window_attrs(kernel, spec.global ? kernel : spec.stride, spec.pad);
  attrs["global"] = spec.global;
  return add_fixed(make_op(name, "maxpool2d", {{"input", {x.op}}}, std::move(attrs)), x.fix_point);
}

Value GraphBuilder::avgpool2d(const std::string& name, const Value& x, const Pool2dSpec& spec,
                              int out_fp) {
  auto kernel = spec.kernel;
  if (spec.global) kernel = {x.shape[1], x.shape[2]};
  AttrMap attrs = window_attrs(kernel, spec.global ? kernel : spec.stride, spec.pad);
  attrs["global"] = spec.global;
  attrs["count_include_pad"] = true;
  return add_fixed(make_op(name, "avgpool2d", {{"input", {x.op}}}, std::move(attrs)), out_fp);
}

Value GraphBuilder::concat(const std::string& name, const std::vector<Value>& xs, std::int64_t axis,
                           int out_fp) {
  OpArg in{"input", {}};
  for (const auto& x : xs) in.producers.push_back(x.op);
  return add_fixed(make_op(name, "concat", {in}, {{"axis", static_cast<std::int32_t>(axis)}}),
                   out_fp);
}

Value GraphBuilder::reshape(const std::string& name, const Value& x,
                            std::vector<std::int64_t> shape) {
  Op op = make_op(name, "reshape", {{"input", {x.op}}}, {{"shape", i32(shape)}});
  op.output.shape = infer_output_shape(graph_, op);
  graph_.add_op(std::move(op));
  return value_of(name, x.fix_point);
}

Value GraphBuilder::flatten(const std::string& name, const Value& x, std::int64_t start_axis,
                            std::int64_t end_axis) {
  Op op = make_op(name, "flatten", {{"input", {x.op}}},
                  {{"start_axis", static_cast<std::int32_t>(start_axis)},
                   {"end_axis", static_cast<std::int32_t>(end_axis)}});
  op.output.shape = infer_output_shape(graph_, op);
  graph_.add_op(std::move(op));
  return value_of(name, x.fix_point);
}

Value GraphBuilder::transpose(const std::string& name, const Value& x,
                              std::vector<std::int64_t> order) {
  Op op = make_op(name, "transpose", {{"input", {x.op}}}, {{"order", i32(order)}});
  op.output.shape = infer_output_shape(graph_, op);
  graph_.add_op(std::move(op));
  return value_of(name, x.fix_point);
}

Value GraphBuilder::softmax(const std::string& name, const Value& x, std::int64_t axis,
                            int out_fp) {
  return add_fixed(
      make_op(name, "softmax", {{"input", {x.op}}}, {{"axis", static_cast<std::int32_t>(axis)}}),
      out_fp);
}

Value GraphBuilder::layernorm(const std::string& name, const Value& x, const Value& gamma,
                              const Value& beta, double epsilon, int out_fp) {
  return add_fixed(
      make_op(name, "layernorm", {{"input", {x.op}}, {"gamma", {gamma.op}}, {"beta", {beta.op}}},
              {{"axis", std::int32_t{-1}}, {"epsilon", static_cast<float>(epsilon)}}),
      out_fp);
}

Value GraphBuilder::gelu(const std::string& name, const Value& x, int out_fp) {
  return add_fixed(make_op(name, "gelu", {{"input", {x.op}}}), out_fp);
}

Value GraphBuilder::sigmoid(const std::string& name, const Value& x, int out_fp) {
  return add_fixed(make_op(name, "sigmoid", {{"input", {x.op}}}), out_fp);
}

Graph GraphBuilder::finish() {
  validate(graph_);
  Graph out = std::move(graph_);
  graph_ = Graph(out.name());
  return out;
}

}  // namespace dpushard
