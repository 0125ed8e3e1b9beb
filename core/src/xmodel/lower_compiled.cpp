// lower_compiled.hpp: compiled `*-fix` ops to the `_int` ops the ref backend runs.

#include "dpushard/xmodel/lower_compiled.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/xmodel/lower_float_ops.hpp"

namespace dpushard {
namespace {

[[noreturn]] void fail(const Op& op, const std::string& what) {
  throw Error("lower_compiled: op '" + op.name + "' (" + op.type + "): " + what);
}

// Attributes that only describe the hardware mapping (placement, op counts, channel counts
// the shapes already give, the first layer's channel augmentation) and change no value.
bool is_descriptive(std::string_view key) {
  static const std::set<std::string, std::less<>> kKeys = {
      "device",  "workload",  "workload_on_arch",    "in_dim",
      "out_dim", "bias_term", "channel_augmentation"};
  return kKeys.contains(key);
}

// Every attribute of `op` must be descriptive or one the lowering reads (`known`).
void check_attrs(const Op& op, const std::set<std::string, std::less<>>& known) {
  for (const auto& [key, value] : op.attrs)
    if (!is_descriptive(key) && !known.contains(key))
      fail(op, "attribute '" + key + "' is not one the lowering knows");
}

// The fix_point of the compiled op's int8 output tensor.
int output_fix_point(const Op& op) {
  const TensorDesc& t = op.output;
  if (t.data_type != DataType::XInt || t.bit_width != 8)
    fail(op, "output tensor '" + t.name + "' is " +
                 std::string(data_type_name(t.data_type, t.bit_width)) + ", not xint8");
  constexpr std::int64_t kMissing = std::int64_t{1} << 40;
  const std::int64_t fp = int_attr(t.attrs, "fix_point", kMissing);
  if (fp == kMissing) fail(op, "output tensor '" + t.name + "' has no fix_point");
  if (fp < -64 || fp > 64) fail(op, "fix_point " + std::to_string(fp) + " is out of range");
  return static_cast<int>(fp);
}

std::string inner_name(const Op& op, std::string_view what) {
  return op.name + "/" + std::string(what);
}

class Lowerer {
 public:
  Lowerer(const Graph& compiled, const Graph* int_graph)
      : compiled_(compiled), int_graph_(int_graph), out_(compiled.name()) {}

  Graph run() {
    for (const Op& op : compiled_.ops()) lower(op);
    return std::move(out_);
  }

 private:
  void lower(const Op& op) {
    const std::string& type = op.type;
    if (type == "data-fix") return lower_data(op);
    if (type == "const-fix") return lower_const(op);
    if (type == "conv2d-fix" || type == "depthwise-conv2d-fix") return lower_conv(op);
    if (type == "eltwise-fix") return lower_eltwise(op);
    if (type == "pool-fix") return lower_pool(op);
    if (type == "concat-fix") return lower_concat(op);
    if (type == "reshape-fix") return lower_reshape(op);
    if (type == "upload" || type == "download" || type == "fix2float") return lower_identity(op);
    // The float ops vai_c_xir leaves in CPU subgraphs (lower_float_ops.hpp).
    if (is_float_cpu_op(type))
      return lower_float_cpu_op(op, compiled_.consumers(op.name).empty(), out_);
    fail(op, "no `_int` form for this op type");
  }

  // `producer` -> fix named after the compiled op, with its output tensor's fix_point.
  void add_fix(const Op& op, const std::string& producer) {
    Op fix;
    fix.name = op.name;
    fix.type = "fix";
    fix.attrs["fix_point"] = std::int32_t{output_fix_point(op)};
    fix.attrs["bit_width"] = std::int32_t{8};
    fix.attrs["if_signed"] = true;
    fix.attrs["round_mode"] = string_attr(op.output.attrs, "round_mode", "DPU_ROUND");
    fix.args = {OpArg{"input", {producer}}};
    fix.output = float32_value(op.output.name, op.output.shape);
    out_.add_op(std::move(fix));
  }

  // A float op of the chain (conv2d, add, a pool, ...) computing the compiled op's value.
  std::string add_inner(const Op& op, std::string type, AttrMap attrs, std::vector<OpArg> args) {
    Op inner;
    inner.name = inner_name(op, type);
    inner.type = std::move(type);
    inner.attrs = std::move(attrs);
    inner.args = std::move(args);
    inner.output = float32_value(inner.name, op.output.shape);
    const std::string name = inner.name;
    out_.add_op(std::move(inner));
    return name;
  }

  // The `nonlinear` attribute as an activation op after `producer`; returns the chain's end.
  std::string add_nonlinear(const Op& op, const std::string& producer) {
    const std::string nonlinear = string_attr(op.attrs, "nonlinear", "NONE");
    if (nonlinear.empty() || nonlinear == "NONE") return producer;
    AttrMap attrs;
    std::string type;
    if (nonlinear == "RELU") {
      type = "relu";
    } else if (nonlinear == "RELU6") {
      type = "relu6";
    } else if (nonlinear == "LEAKYRELU") {
      // The DPU's only leaky slope is 0.1, computed as 26/256 (VITIS_AI.md section 2), which
      // is what ref does for a leaky-relu with alpha 0.1 (docs/numerics.md section 3).
      type = "leaky-relu";
      attrs["alpha"] = 0.1F;
    } else {
      fail(op, "nonlinear '" + nonlinear + "' has no `_int` form here");
    }
    return add_inner(op, type, std::move(attrs), {OpArg{"input", {producer}}});
  }

  void lower_data(const Op& op) {
    check_attrs(op, {"shape", "data_type"});
    if (string_attr(op.attrs, "data_type", "XINT8") != "XINT8")
      fail(op, "data_type '" + string_attr(op.attrs, "data_type", "") + "' is not XINT8");
    Op data;
    data.name = inner_name(op, "data");
    data.type = "data";
    data.attrs["data_type"] = std::string("FLOAT32");
    std::vector<std::int32_t> shape;
    for (std::int64_t d : op.output.shape) shape.push_back(static_cast<std::int32_t>(d));
    data.attrs["shape"] = shape;
    data.output = float32_value(data.name, op.output.shape);
    out_.add_op(std::move(data));
    add_fix(op, inner_name(op, "data"));
  }

  void lower_const(const Op& op) {
    check_attrs(op, {"data", "shape", "data_type"});
    if (string_attr(op.attrs, "data_type", "XINT8") != "XINT8")
      fail(op, "data_type '" + string_attr(op.attrs, "data_type", "") + "' is not XINT8");
    const int fp = output_fix_point(op);
    const std::size_t count = static_cast<std::size_t>(element_count(op.output.shape));
    std::vector<float> values;
    const Bytes* data = find_attr<Bytes>(op.attrs, "data");
    if (data != nullptr && !data->data.empty()) {
      if (data->data.size() != count)
        fail(op, "attribute 'data' holds " + std::to_string(data->data.size()) +
                     " bytes, its shape " + shape_text(op.output.shape) + " needs " +
                     std::to_string(count));
      for (char c : data->data)
        values.push_back(static_cast<float>(std::ldexp(static_cast<std::int8_t>(c), -fp)));
    } else {
      values = int_weights(op, fp, count);
    }
    Op value;
    value.name = inner_name(op, "const");
    value.type = "const";
    value.attrs["data_type"] = std::string("FLOAT32");
    set_const_values(value, values);
    value.output = float32_value(value.name, op.output.shape);
    out_.add_op(std::move(value));
    add_fix(op, inner_name(op, "const"));
  }

  // The weights of an empty const-fix, from the `_int` file's const of the same name.
  std::vector<float> int_weights(const Op& op, int fp, std::size_t count) const {
    if (int_graph_ == nullptr)
      fail(op,
           "holds no weights: the compiler packed them into the DPU subgraph's parameters, "
           "whose order dpushard does not read; give the `_int` file it was compiled from");
    std::string name = op.name;
    const Op* source = int_graph_->find(name);
    static constexpr std::string_view kReshaped = "(reshaped)";
    if (source == nullptr && name.ends_with(kReshaped)) {
      name.resize(name.size() - kReshaped.size());
      source = int_graph_->find(name);
    }
    if (source == nullptr || source->type != "const")
      fail(op, "holds no weights and the `_int` file '" + int_graph_->name() + "' has no const '" +
                   name + "'");
    // The `_int` const's fix (its fix_point) must agree with the compiled tensor's.
    std::optional<std::int64_t> int_fp;
    for (const Op* consumer : int_graph_->consumers(source->name))
      if (consumer->type == "fix" && consumer->attrs.contains("fix_point"))
        int_fp = int_attr(consumer->attrs, "fix_point", 0);
    if (!int_fp) fail(op, "const '" + name + "' in the `_int` file has no fix op with a fix_point");
    if (*int_fp != fp)
      fail(op, "fix_point " + std::to_string(fp) + " differs from that of const '" + name +
                   "' in the `_int` file (" + std::to_string(*int_fp) + ")");
    std::vector<float> values = const_values(*source);
    if (values.size() != count)
      fail(op, "has " + std::to_string(count) + " values, const '" + name +
                   "' in the `_int` file " + std::to_string(values.size()));
    return values;
  }

  void lower_conv(const Op& op) {
    check_attrs(op, {"kernel", "stride", "dilation", "pad", "pad_mode", "group", "nonlinear",
                     "hsigmoid_in", "shift_hsigmoid", "shift_hswish"});
    // The output size comes from the output tensor: FLOOR and CEIL differ only in it.
    const std::string pad_mode = string_attr(op.attrs, "pad_mode", "FLOOR");
    if (pad_mode != "FLOOR" && pad_mode != "CEIL")
      fail(op, "pad_mode '" + pad_mode + "' is not FLOOR or CEIL");
    AttrMap attrs;
    for (const char* key : {"kernel", "stride", "dilation", "pad", "group"})
      if (const auto it = op.attrs.find(key); it != op.attrs.end()) attrs[key] = it->second;
    attrs["pad_mode"] = pad_mode;
    std::vector<OpArg> args;
    for (const char* arg : {"input", "weights", "bias"}) {
      const auto& producers = op.producers(arg);
      if (producers.size() > 1 || (producers.empty() && std::string_view(arg) != "bias"))
        fail(op, "needs exactly one '" + std::string(arg) + "' producer");
      if (!producers.empty()) args.push_back(OpArg{arg, producers});
    }
    for (const OpArg& arg : op.args)
      if (arg.name != "input" && arg.name != "weights" && arg.name != "bias")
        fail(op, "argument '" + arg.name + "' is not one the lowering knows");
    const std::string type = op.type == "conv2d-fix" ? "conv2d" : "depthwise-conv2d";
    const std::string conv = add_inner(op, type, std::move(attrs), std::move(args));
    add_fix(op, add_nonlinear(op, conv));
  }

  void lower_eltwise(const Op& op) {
    check_attrs(op, {"type", "nonlinear"});
    const std::string kind = string_attr(op.attrs, "type", "ADD");
    if (kind != "ADD") fail(op, "eltwise type '" + kind + "' has no `_int` form here");
    const std::string add = add_inner(op, "add", {}, {OpArg{"input", single_arg(op)}});
    add_fix(op, add_nonlinear(op, add));
  }

  void lower_pool(const Op& op) {
    check_attrs(op, {"kernel", "stride", "pad", "type", "global"});
    const std::string kind = string_attr(op.attrs, "type", "");
    if (kind != "MAX" && kind != "AVG") fail(op, "pool type '" + kind + "' is not MAX or AVG");
    AttrMap attrs;
    for (const char* key : {"kernel", "stride", "pad", "global"})
      if (const auto it = op.attrs.find(key); it != op.attrs.end()) attrs[key] = it->second;
    // The DPU averages with padding counted as zero and its N / 2^M factor (docs/numerics.md
    // section 6): ref's avgpool2d without a correction mul.
    if (kind == "AVG") attrs["count_include_pad"] = true;
    const std::string pool = add_inner(op, kind == "MAX" ? "maxpool2d" : "avgpool2d",
                                       std::move(attrs), {OpArg{"input", single_arg(op)}});
    add_fix(op, pool);
  }

  void lower_concat(const Op& op) {
    check_attrs(op, {"axis"});
    AttrMap attrs;
    if (const auto it = op.attrs.find("axis"); it != op.attrs.end()) attrs["axis"] = it->second;
    add_fix(op, add_inner(op, "concat", std::move(attrs), {OpArg{"input", single_arg(op)}}));
  }

  void lower_reshape(const Op& op) {
    check_attrs(op, {"shape"});
    add_layout(op, "reshape");
  }

  void lower_identity(const Op& op) {
    if (op.type == "fix2float") {
      check_attrs(op, {"fix_point", "bit_width", "if_signed", "round_mode"});
    } else {
      check_attrs(op, {});
    }
    add_layout(op, "identity");
  }

  // An op that moves int8 values: named after the compiled op, keeping its input's fix_point.
  void add_layout(const Op& op, const std::string& type) {
    const std::vector<std::string> input = single_arg(op);
    if (input.size() != 1) fail(op, "needs exactly one input");
    if (op.type != "fix2float") {
      const Op* producer = compiled_.find(input.front());
      if (producer == nullptr) fail(op, "input '" + input.front() + "' is missing");
      if (producer->type != "fix2float" && output_fix_point(*producer) != output_fix_point(op))
        fail(op, "fix_point " + std::to_string(output_fix_point(op)) +
                     " differs from its input's " + std::to_string(output_fix_point(*producer)));
    }
    Op layout;
    layout.name = op.name;
    layout.type = type;
    if (const auto it = op.attrs.find("shape"); it != op.attrs.end() && type == "reshape")
      layout.attrs["shape"] = it->second;
    layout.args = {OpArg{"input", input}};
    layout.output = float32_value(op.output.name, op.output.shape);
    out_.add_op(std::move(layout));
  }

  // The producers of the only argument, which must be `input`.
  std::vector<std::string> single_arg(const Op& op) const {
    if (op.args.size() != 1 || op.args[0].name != "input" || op.args[0].producers.empty())
      fail(op, "needs one argument 'input'");
    return op.args[0].producers;
  }

  const Graph& compiled_;
  const Graph* int_graph_;
  Graph out_;
};

}  // namespace

Graph lower_compiled(const Graph& compiled, const Graph* int_graph) {
  return Lowerer(compiled, int_graph).run();
}

}  // namespace dpushard
