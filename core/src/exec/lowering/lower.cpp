#include "lower.hpp"

#include <cmath>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/shape.hpp"
#include "float_math.hpp"

namespace dpushard::lowering {

namespace {

// Every op type the lowering handles; anything else is reported before lowering starts.
bool supported_type(std::string_view type) {
  static const std::unordered_set<std::string_view> kTypes = {
      "data",         "const",         "fix",       "conv2d",     "depthwise-conv2d",
      "matmul",       "inner-product", "add",       "mul",        "maxpool2d",
      "avgpool2d",    "concat",        "reshape",   "flatten",    "squeeze",
      "unsqueeze",    "identity",      "transpose", "stack",      "softmax",
      "layernorm",    "relu",          "relu6",     "leaky-relu", "sigmoid",
      "hard-sigmoid", "hard-swish",    "gelu"};
  return kTypes.contains(type);
}

bool is_activation(std::string_view type) {
  Activation unused{};
  return activation_of(type, unused);
}

class Planner final : public Lowering {
 public:
  Planner(const Graph& graph, const KernelSet& kernels) : Lowering(graph), kernels_(kernels) {}

  Program run() {
    const Graph& g = graph();
    if (is_compiled(g))
      throw Error("ref: graph '" + g.name() +
                  "' is a compiled xmodel; the ref backend runs the `_int` form");
    for (const Op& op : g.ops())
      if (!supported_type(op.type)) fail(op, "the ref backend cannot run this op type");
    for (std::size_t index : g.topological_order()) {
      const Op& op = g.ops()[index];
      if (op.type == "fix")
        lower_fix(op);
      else if (is_layout_op(op.type))
        lower_layout(op);
    }
    for (const Op* input : g.inputs()) {
      auto it = input_slots_.find(input->name);
      if (it == input_slots_.end()) fail(*input, "has no fix op after it");
      program_.inputs.push_back(it->second);
    }
    for (const Op* output : g.outputs()) {
      auto it = fixed_.find(output->name);
      if (it == fixed_.end())
        fail(*output, "is a graph output without a fix op; the ref backend outputs int8 tensors");
      program_.outputs.push_back(it->second);
    }
    return std::move(program_);
  }

  SlotId fixed(const Op& consumer, std::string_view producer) const override {
    auto it = fixed_.find(std::string(producer));
    if (it != fixed_.end()) return it->second;
    const Op* op = graph().find(producer);
    fail(consumer, "input '" + std::string(producer) + "' (" + (op ? op->type : "missing") +
                       ") is not a fixed-point tensor; a fix op must produce it");
  }

  std::optional<std::vector<float>> raw_const(std::string_view producer) const override {
    const Op* op = graph().find(producer);
    if (op == nullptr || op->type != "const") return std::nullopt;
    return const_values(*op);
  }

  const QTensor& slot(SlotId id) const override { return program_.slots.at(id); }

 private:
  SlotId new_slot(const std::string& name, std::vector<std::int64_t> shape, int fix_point) {
    for (std::int64_t dim : shape)
      if (dim < 0) throw Error("ref: op '" + name + "' has a negative dimension");
    QTensor t{name, std::move(shape), fix_point, {}};
    t.data.assign(static_cast<std::size_t>(t.element_count()), 0);
    program_.slots.push_back(std::move(t));
    return program_.slots.size() - 1;
  }

  // The single consumer of `op`, which must be `expected`: a float value between a
  // producer and its fix cannot be shared (there is no int8 tensor to share).
  void require_single_consumer(const Op& op, const Op& expected) const {
    const auto consumers = graph().consumers(op.name);
    if (consumers.size() != 1 || consumers.front() != &expected)
      fail(op, "its float output feeds " + std::to_string(consumers.size()) +
                   " ops; the ref backend needs it to feed only '" + expected.name + "'");
  }

  void lower_fix(const Op& fix) {
    const auto& producers = fix.producers("input");
    if (producers.size() != 1) fail(fix, "needs exactly one input");
    const Op& x = graph().op(producers.front());
    const std::int64_t fp = int_attr(fix.attrs, "fix_point", std::int64_t{1} << 20);
    if (fp < -64 || fp > 64) fail(fix, "missing or out-of-range attribute 'fix_point'");
    if (int_attr(fix.attrs, "bit_width", 8) != 8 || !bool_attr(fix.attrs, "if_signed", true))
      fail(fix, "the ref backend runs signed 8-bit fix ops only");
    RoundMode mode = RoundMode::Dpu;
    try {
      mode = parse_round_mode(string_attr(fix.attrs, "round_mode", "DPU_ROUND"));
    } catch (const Error& e) {
      fail(fix, e.what());
    }
    const int fp_out = static_cast<int>(fp);
    std::vector<std::int64_t> shape = fix.output.shape;
    if (shape.empty() && x.type == "const") shape = x.output.shape;
    const SlotId out = new_slot(fix.name, shape, fp_out);
    fixed_[fix.name] = out;

    if (x.type == "const") return quantize_const(x, fix, out);
    if (x.type == "data") {
      if (input_slots_.contains(x.name)) fail(x, "feeds more than one fix op");
      if (element_count(x.output.shape) != element_count(shape) && !x.output.shape.empty())
        fail(fix, "shape " + shape_text(shape) + " differs from its data op's " +
                      shape_text(x.output.shape));
      input_slots_[x.name] = out;
      return;
    }
    const Chain fixed_chain{fix, nullptr, fix, fp_out, mode, out};
    if (fixed_.contains(x.name)) {  // a fix over a fixed tensor: a rescale
      add(kernels_.elementwise(fixed_chain, *this, fixed_.at(x.name)));
      return;
    }
    require_single_consumer(x, fix);
    if (is_activation(x.type)) {
      const auto& inputs = x.producers("input");
      if (inputs.size() != 1) fail(x, "needs exactly one input");
      if (auto it = fixed_.find(inputs.front()); it != fixed_.end()) {
        add(kernels_.elementwise(Chain{x, &x, fix, fp_out, mode, out}, *this, it->second));
        return;
      }
      const Op& producer = graph().op(inputs.front());
      require_single_consumer(producer, x);
      return lower_chain(Chain{producer, &x, fix, fp_out, mode, out});
    }
    lower_chain(Chain{x, nullptr, fix, fp_out, mode, out});
  }

  void lower_chain(const Chain& chain) {
    const std::string& type = chain.producer.type;
    if (type == "conv2d" || type == "depthwise-conv2d") return add(kernels_.conv(chain, *this));
    if (type == "matmul" || type == "inner-product") return add(kernels_.matmul(chain, *this));
    if (type == "add") return add(kernels_.add(chain, *this));
    if (type == "mul") return add(kernels_.mul(chain, *this));
    if (type == "maxpool2d") return add(kernels_.maxpool(chain, *this));
    if (type == "avgpool2d") return add(kernels_.avgpool(chain, *this));
    if (type == "concat") return add(kernels_.concat(chain, *this));
    if (type == "softmax") return add(kernels_.softmax(chain, *this));
    if (type == "layernorm") return add(kernels_.layernorm(chain, *this));
    if (is_activation(type))
      fail(chain.producer, "an activation over an unfixed tensor cannot feed another activation");
    fail(chain.producer, "the ref backend cannot run this op before a fix");
  }

  // Layout ops over fixed tensors move int8 values and keep the fix_point; over float
  // consts (the `stack` of shape constants feeding a reshape) they carry no data.
  void lower_layout(const Op& op) {
    const auto& inputs = op.producers("input");
    bool all_const = !inputs.empty();
    for (const auto& name : inputs) all_const = all_const && raw_const(name).has_value();
    if (all_const) return;
    if (inputs.empty()) fail(op, "has no input");
    std::vector<SlotId> in;
    for (std::size_t i = 0; i < inputs.size(); ++i) in.push_back(arg_slot(op, "input", i));
    if (op.type != "stack" && in.size() != 1) fail(op, "needs exactly one input");
    const SlotId out = new_slot(op.name, op.output.shape, program_.slots[in.front()].fix_point);
    fixed_[op.name] = out;
    add(op.type == "stack" ? kernels_.stack(op, in, out, *this)
                           : kernels_.layout(op, in.front(), out, *this));
  }

  // Weights: q = value * 2^fix_point must be an int8 exactly (the quantizer stores
  // q * 2^-fix_point as float32); anything else means the file is not quantized.
  void quantize_const(const Op& constant, const Op& fix, SlotId out) {
    const std::vector<float> values = const_values(constant);
    QTensor& t = program_.slots[out];
    if (values.size() != t.data.size())
      fail(fix, "shape " + shape_text(t.shape) + " differs from const '" + constant.name +
                    "' with " + std::to_string(values.size()) + " values");
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double q = std::ldexp(double{values[i]}, t.fix_point);
      if (q != std::nearbyint(q) || q < -128.0 || q > 127.0)
        fail(constant, "value " + std::to_string(values[i]) + " at index " + std::to_string(i) +
                           " is not an int8 times 2^-" + std::to_string(t.fix_point) + " (fix '" +
                           fix.name + "')");
      t.data[i] = static_cast<std::int8_t>(q);
    }
  }

  void add(std::unique_ptr<Kernel> kernel) {
    if (!kernel) throw Error("internal: a kernel factory returned no kernel");
    program_.kernels.push_back(std::move(kernel));
  }

  const KernelSet& kernels_;

  Program program_;
  std::unordered_map<std::string, SlotId> fixed_;        // op name -> its int8 value
  std::unordered_map<std::string, SlotId> input_slots_;  // data op name -> its fix's slot
};

}  // namespace

Program lower_graph(const Graph& graph, const KernelSet& kernels) {
  if (!kernels.conv || !kernels.matmul || !kernels.add || !kernels.mul || !kernels.maxpool ||
      !kernels.avgpool || !kernels.concat || !kernels.softmax || !kernels.layernorm ||
      !kernels.elementwise || !kernels.layout || !kernels.stack)
    throw Error("internal: lower_graph needs a kernel for every op family");
  require_weights(graph, "exec");
  validate(graph);
  return Planner(graph, kernels).run();
}

}  // namespace dpushard::lowering
