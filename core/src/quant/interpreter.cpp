// The float reference interpreter: one step per op in topological order, weights
// prepared once, every intermediate freed after its last reader.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <unordered_map>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/graph/window.hpp"
#include "dpushard/quant/quantize.hpp"
#include "float_kernels.hpp"

namespace dpushard {

namespace {

using quant::Shape;

[[noreturn]] void fail_float_op(const Op& op, const std::string& what) {
  throw Error("float interpreter: op '" + op.name + "' (" + op.type + "): " + what);
}

// The op's window (dpushard::window_of) in the float kernels' form, a global pool's resolved.
quant::Window float_window(const Op& op, const Shape& in) {
  if (in.size() != 4) fail_float_op(op, "expects an NHWC input");
  const Window d = window_of(op).over(in[1], in[2]);
  if (d.pad_mode == "SAME") fail_float_op(op, "pad_mode SAME is not supported");
  quant::Window w;
  w.kh = d.kernel_h;
  w.kw = d.kernel_w;
  w.sh = d.stride_h;
  w.sw = d.stride_w;
  w.dh = d.dilation_h;
  w.dw = d.dilation_w;
  if (d.pad_mode != "VALID") {
    w.pl = d.pad_left;
    w.pr = d.pad_right;
    w.pt = d.pad_top;
    w.pb = d.pad_bottom;
  }
  return w;
}

float activation(const std::string& type, float x, float alpha) {
  const double v = x;
  if (type == "relu") return std::max(x, 0.0f);
  if (type == "relu6") return std::clamp(x, 0.0f, 6.0f);
  if (type == "leaky-relu") return x < 0.0f ? alpha * x : x;
  if (type == "sigmoid") return static_cast<float>(1.0 / (1.0 + std::exp(-v)));
  if (type == "hard-sigmoid") return static_cast<float>(std::clamp(v + 3.0, 0.0, 6.0) / 6.0);
  if (type == "hard-swish") return static_cast<float>(v * std::clamp(v + 3.0, 0.0, 6.0) / 6.0);
  if (type == "gelu")
    return static_cast<float>(0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2)));
  if (type == "tanh") return std::tanh(x);
  return x;
}

bool is_activation(const std::string& t) {
  return t == "relu" || t == "relu6" || t == "leaky-relu" || t == "sigmoid" ||
         t == "hard-sigmoid" || t == "hard-swish" || t == "gelu" || t == "tanh";
}

bool is_layout(const std::string& t) {
  return t == "reshape" || t == "flatten" || t == "identity" || t == "squeeze";
}

}  // namespace

struct FloatInterpreter::Impl {
  struct Step {
    const Op* op = nullptr;
    std::size_t slot = 0;
    std::vector<std::size_t> inputs;  // slots of "input" producers, then other args
    std::vector<float> weights;       // prepared conv/depthwise weights
    quant::Window window;
    std::int64_t group = 1;
    std::optional<std::size_t> bias;  // slot
  };

  const Graph& graph;
  std::vector<FloatTensor> slots;  // one per op (graph.ops() index)
  std::vector<bool> persistent;    // consts keep their values across runs
  std::vector<Step> steps;
  std::vector<std::vector<std::size_t>> free_after;  // step -> slots dead after it
  std::vector<std::size_t> input_slots, output_slots;
  std::unordered_map<std::string, std::size_t> index;

  explicit Impl(const Graph& g) : graph(g) {
    const auto& ops = g.ops();
    slots.resize(ops.size());
    persistent.assign(ops.size(), false);
    for (std::size_t i = 0; i < ops.size(); ++i) index[ops[i].name] = i;
    for (const Op* in : g.inputs()) input_slots.push_back(index.at(in->name));
    for (const Op* out : g.outputs()) output_slots.push_back(index.at(out->name));
    std::vector<std::ptrdiff_t> last_use(ops.size(), -1);
    for (std::size_t i : g.topological_order()) {
      const Op& op = ops[i];
      if (op.type == "data") continue;
      if (op.type == "const") {
        slots[i] = {op.output.shape, const_values(op)};
        persistent[i] = true;
        continue;
      }
      Step s = prepare(op, i);
      const auto step = static_cast<std::ptrdiff_t>(steps.size());
      for (auto in : s.inputs) last_use[in] = step;
      if (s.bias) last_use[*s.bias] = step;
      steps.push_back(std::move(s));
    }
    free_after.resize(steps.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (persistent[i] ||
          std::find(output_slots.begin(), output_slots.end(), i) != output_slots.end())
        continue;
      if (last_use[i] >= 0) free_after[static_cast<std::size_t>(last_use[i])].push_back(i);
    }
  }

  std::size_t slot_of(const Op& op, const std::string& producer) const {
    auto it = index.find(producer);
    if (it == index.end()) fail_float_op(op, "missing producer '" + producer + "'");
    return it->second;
  }

  Step prepare(const Op& op, std::size_t i) {
    Step s;
    s.op = &op;
    s.slot = i;
    for (const auto& p : op.producers("input")) s.inputs.push_back(slot_of(op, p));
    if (s.inputs.empty()) fail_float_op(op, "has no input");
    const std::string& t = op.type;
    if (t == "conv2d" || t == "depthwise-conv2d") {
      const auto& wp = op.producers("weights");
      if (wp.size() != 1) fail_float_op(op, "needs one weights input");
      const Op& w = graph.op(wp[0]);
      const Shape& ws = w.output.shape;
      const Shape& in = graph.op(op.producers("input")[0]).output.shape;
      s.window = float_window(op, in);
      const std::vector<float> values = weight_values(w);
      if (t == "conv2d") {
        s.group = int_attr(op.attrs, "group", 1);
        s.weights = quant::reorder_conv_weights(values, ws[0], ws[1], ws[2], ws[3], s.group);
      } else {
        if (ws[0] != 1) fail_float_op(op, "channel multiplier other than 1");
        s.weights = values;
      }
      if (!op.producers("bias").empty()) s.bias = slot_of(op, op.producers("bias")[0]);
    } else if (t == "matmul") {
      if (s.inputs.size() != 2) fail_float_op(op, "needs 2 inputs");
      if (bool_attr(op.attrs, "transpose_a", false))
        fail_float_op(op, "transpose_a is not supported");
      if (!op.producers("bias").empty()) s.bias = slot_of(op, op.producers("bias")[0]);
    } else if (t == "maxpool2d" || t == "avgpool2d") {
      s.window = float_window(op, graph.op(op.producers("input")[0]).output.shape);
    } else if (t == "layernorm") {
      s.inputs.push_back(slot_of(op, op.producers("gamma").at(0)));
      s.inputs.push_back(slot_of(op, op.producers("beta").at(0)));
    } else if (!(t == "fix" || t == "add" || t == "mul" || t == "softmax" || t == "concat" ||
                 t == "transpose" || is_activation(t) || is_layout(t))) {
      fail_float_op(op, "is not supported by the float interpreter");
    }
    return s;
  }

  // Weights through an optional fix (an `_int` graph's const -> fix).
  std::vector<float> weight_values(const Op& w) const {
    if (w.type == "const") return const_values(w);
    if (w.type == "fix") {
      const Op& c = graph.op(w.producers("input").at(0));
      std::vector<float> v = const_values(c);
      const int fp = static_cast<int>(int_attr(w.attrs, "fix_point", 0));
      const RoundMode mode = parse_round_mode(string_attr(w.attrs, "round_mode", "DPU_ROUND"));
      for (auto& x : v) x = static_cast<float>(dequantize(quantize(x, fp, mode), fp));
      return v;
    }
    throw Error("float interpreter: weights '" + w.name + "' are not a constant");
  }

  void execute(const Step& s) {
    const Op& op = *s.op;
    FloatTensor& out = slots[s.slot];
    out.shape = op.output.shape;
    out.data.assign(static_cast<std::size_t>(element_count(out.shape)), 0.0f);
    const FloatTensor& x = slots[s.inputs[0]];
    const std::string& t = op.type;
    const float* bias = s.bias ? slots[*s.bias].data.data() : nullptr;
    if (t == "conv2d") {
      quant::conv2d(x.data.data(), x.shape, s.weights.data(), bias, out.data.data(), out.shape,
                    s.window, s.group);
    } else if (t == "depthwise-conv2d") {
      quant::depthwise_conv2d(x.data.data(), x.shape, s.weights.data(), bias, out.data.data(),
                              out.shape, s.window);
    } else if (t == "matmul") {
      const FloatTensor& b = slots[s.inputs[1]];
      quant::matmul(x.data.data(), x.shape, b.data.data(), b.shape,
                    bool_attr(op.attrs, "transpose_b", false), bias, out.data.data(), out.shape);
    } else if (t == "add" || t == "mul") {
      const auto kind = t == "add" ? quant::Binary::Add : quant::Binary::Mul;
      const FloatTensor& b = slots[s.inputs[1]];
      quant::broadcast_binary(x.data.data(), x.shape, b.data.data(), b.shape, out.data.data(),
                              out.shape, kind);
      for (std::size_t k = 2; k < s.inputs.size(); ++k) {
        const FloatTensor& c = slots[s.inputs[k]];
        std::vector<float> acc = out.data;
        quant::broadcast_binary(acc.data(), out.shape, c.data.data(), c.shape, out.data.data(),
                                out.shape, kind);
      }
    } else if (t == "maxpool2d" || t == "avgpool2d") {
      quant::pool2d(x.data.data(), x.shape, out.data.data(), out.shape, s.window, t == "maxpool2d",
                    bool_attr(op.attrs, "count_include_pad", true));
    } else if (t == "softmax") {
      out.data = x.data;
      auto axis = int_attr(op.attrs, "axis", -1);
      if (axis < 0) axis += static_cast<std::int64_t>(out.shape.size());
      quant::softmax(out.data.data(), out.shape, axis);
    } else if (t == "layernorm") {
      quant::layernorm(x.data.data(), x.shape, slots[s.inputs[1]].data.data(),
                       slots[s.inputs[2]].data.data(), float_attr(op.attrs, "epsilon", 1e-5),
                       out.data.data());
    } else if (t == "concat") {
      std::vector<const float*> ins;
      std::vector<Shape> shapes;
      for (auto in : s.inputs) {
        ins.push_back(slots[in].data.data());
        shapes.push_back(slots[in].shape);
      }
      auto axis = int_attr(op.attrs, "axis", -1);
      if (axis < 0) axis += static_cast<std::int64_t>(out.shape.size());
      quant::concat(ins, shapes, axis, out.data.data());
    } else if (t == "transpose") {
      quant::transpose(x.data.data(), x.shape, ints_attr(op.attrs, "order", op.name),
                       out.data.data());
    } else if (t == "fix") {
      const int fp = static_cast<int>(int_attr(op.attrs, "fix_point", 0));
      const RoundMode mode = parse_round_mode(string_attr(op.attrs, "round_mode", "DPU_ROUND"));
      for (std::size_t k = 0; k < out.data.size(); ++k)
        out.data[k] = static_cast<float>(dequantize(quantize(x.data[k], fp, mode), fp));
    } else if (is_activation(t)) {
      const auto alpha = static_cast<float>(float_attr(op.attrs, "alpha", 0.0));
      for (std::size_t k = 0; k < out.data.size(); ++k)
        out.data[k] = activation(t, x.data[k], alpha);
    } else {  // layout ops: same elements, new shape
      out.data = x.data;
    }
  }

  std::vector<FloatTensor> run(const std::vector<FloatTensor>& inputs, const Observer& observe) {
    if (inputs.size() != input_slots.size())
      throw Error("float interpreter: " + std::to_string(inputs.size()) +
                  " inputs given, the graph has " + std::to_string(input_slots.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Op& op = graph.ops()[input_slots[i]];
      if (inputs[i].shape != op.output.shape ||
          static_cast<std::int64_t>(inputs[i].data.size()) != element_count(op.output.shape))
        throw Error("float interpreter: input '" + op.name + "' has the wrong shape");
      slots[input_slots[i]] = inputs[i];
      if (observe) observe(op, slots[input_slots[i]]);
    }
    for (std::size_t k = 0; k < steps.size(); ++k) {
      execute(steps[k]);
      if (observe) observe(*steps[k].op, slots[steps[k].slot]);
      for (auto dead : free_after[k]) {
        slots[dead].data.clear();
        slots[dead].data.shrink_to_fit();
      }
    }
    std::vector<FloatTensor> out;
    for (auto o : output_slots) out.push_back(slots[o]);
    return out;
  }
};

FloatInterpreter::FloatInterpreter(const Graph& graph) : impl_(std::make_unique<Impl>(graph)) {}
FloatInterpreter::~FloatInterpreter() = default;

std::vector<FloatTensor> FloatInterpreter::run(const std::vector<FloatTensor>& inputs,
                                               const Observer& observe) {
  return impl_->run(inputs, observe);
}

}  // namespace dpushard
