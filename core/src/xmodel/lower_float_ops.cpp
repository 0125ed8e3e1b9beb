// lower_float_ops.hpp: XIR's float CPU ops to `_int` ops.

#include "dpushard/xmodel/lower_float_ops.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/numerics.hpp"

namespace dpushard {
namespace {

[[noreturn]] void fail_float_op(const Op& op, const std::string& what) {
  throw Error("lower_compiled: op '" + op.name + "' (" + op.type + "): " + what);
}

// Each float op lowered and the attributes its XIR definition gives it (built_in_ops.cpp).
const std::map<std::string, std::set<std::string, std::less<>>, std::less<>>& float_ops() {
  static const std::map<std::string, std::set<std::string, std::less<>>, std::less<>> kOps = {
      {"fix2float", {"fix_point", "bit_width", "if_signed", "round_mode"}},
      {"float2fix", {"fix_point", "bit_width", "if_signed", "round_mode"}},
      {"softmax", {"axis"}},
      {"sigmoid", {}},
      {"relu", {}},
      {"relu6", {}},
      {"leaky-relu", {"alpha"}},
      {"hard-sigmoid", {}},
      {"hard-swish", {}},
      {"gelu", {}},
      {"add", {}},
      {"mul", {}},
      {"concat", {"axis"}},
      {"reshape", {"shape"}},
      {"flatten", {"start_axis", "end_axis"}},
      {"squeeze", {"axis"}},
      {"transpose", {"order"}},
      {"identity", {}},
  };
  return kOps;
}

// Attributes that describe the placement and change no value (as lower_compiled ignores them).
bool is_placement(std::string_view key) {
  return key == "device" || key == "workload" || key == "workload_on_arch";
}

bool moves_values_only(std::string_view type) { return is_layout_op(type) || type == "fix2float"; }

void check_float_attrs(const Op& op) {
  const auto& known = float_ops().at(op.type);
  for (const auto& [key, value] : op.attrs)
    if (!is_placement(key) && !known.contains(key))
      fail_float_op(op, "attribute '" + key + "' is not one the lowering knows");
}

// float2fix's (and fix2float's) fix_point, checked against its int8 tensor's where it has one.
int float2fix_point(const Op& op, const TensorDesc& xint) {
  constexpr std::int64_t kMissing = std::int64_t{1} << 40;
  const std::int64_t fp = int_attr(op.attrs, "fix_point", kMissing);
  if (fp == kMissing) fail_float_op(op, "has no attribute 'fix_point'");
  if (fp < -64 || fp > 64)
    fail_float_op(op, "fix_point " + std::to_string(fp) + " is out of range");
  if (int_attr(op.attrs, "bit_width", 8) != 8 || !bool_attr(op.attrs, "if_signed", true))
    fail_float_op(op, "only signed 8-bit values are lowered");
  const std::int64_t tensor_fp = int_attr(xint.attrs, "fix_point", fp);
  if (tensor_fp != fp)
    fail_float_op(op, "fix_point " + std::to_string(fp) + " differs from its tensor's " +
                          std::to_string(tensor_fp));
  return static_cast<int>(fp);
}

std::vector<std::string> float_inputs(const Op& op) {
  std::vector<std::string> inputs;
  for (const OpArg& arg : op.args) {
    if (arg.name != "input" && !(op.type == "reshape" && arg.name == "shape"))
      fail_float_op(op, "argument '" + arg.name + "' is not one the lowering knows");
    if (arg.name == "input")
      inputs.insert(inputs.end(), arg.producers.begin(), arg.producers.end());
  }
  if (inputs.empty()) fail_float_op(op, "has no input");
  return inputs;
}

}  // namespace

bool is_float_cpu_op(std::string_view type) { return float_ops().contains(type); }

int float_output_fix_point(const Op& op, const std::vector<int>& inputs) {
  if (op.type == "softmax" || op.type == "sigmoid" || op.type == "hard-sigmoid") return 7;
  if (inputs.empty()) fail_float_op(op, "has no fixed-point input");
  const int smallest = *std::min_element(inputs.begin(), inputs.end());
  if (op.type == "add") return smallest - 1;
  if (op.type == "mul") return std::accumulate(inputs.begin(), inputs.end(), 0) - 7;
  return smallest;  // relu, relu6, leaky-relu, hard-swish, gelu (|f(x)| <= |x|), concat
}

void lower_float_cpu_op(const Op& op, bool is_output, Graph& out) {
  if (!is_float_cpu_op(op.type)) fail_float_op(op, "no `_int` form for this op type");
  check_float_attrs(op);
  const std::vector<std::string> inputs = float_inputs(op);
  Op lowered;
  lowered.name = op.name;
  lowered.args = op.args;
  lowered.output = float32_value(op.output.name, op.output.shape);
  if (op.type == "fix2float" || op.type == "float2fix") {
    if (inputs.size() != 1) fail_float_op(op, "needs exactly one input");
    const int fp =
        float2fix_point(op, op.type == "float2fix" ? op.output : out.op(inputs.front()).output);
    if (op.type == "fix2float") {
      // Exact in float: its consumers read the int8 tensor, as the `_int` form's ops read a fix.
      const std::optional<int> in_fp = fix_point_of(out, inputs.front());
      if (in_fp && *in_fp != fp)
        fail_float_op(op, "fix_point " + std::to_string(fp) + " differs from its input's " +
                              std::to_string(*in_fp));
      lowered.type = "identity";
    } else {
      lowered.type = "fix";
      lowered.attrs["fix_point"] = std::int32_t{fp};
      lowered.attrs["bit_width"] = std::int32_t{8};
      lowered.attrs["if_signed"] = true;
      const std::string mode = string_attr(op.attrs, "round_mode", "DPU_ROUND");
      try {
        parse_round_mode(mode);
      } catch (const Error& e) {
        fail_float_op(op, e.what());
      }
      lowered.attrs["round_mode"] = mode;
    }
    out.add_op(std::move(lowered));
    return;
  }
  lowered.type = op.type;
  lowered.attrs = op.attrs;
  std::erase_if(lowered.attrs, [](const auto& attr) { return is_placement(attr.first); });
  if (!is_output || moves_values_only(op.type)) {
    out.add_op(std::move(lowered));
    return;
  }
  // A float value that leaves the model: the op under another name, then a fix named as it.
  std::vector<int> fix_points;
  for (const std::string& input : inputs) {
    const std::optional<int> fp = fix_point_of(out, input);
    if (!fp) fail_float_op(op, "input '" + input + "' is not a fixed-point tensor");
    fix_points.push_back(*fp);
  }
  const int fp = float_output_fix_point(op, fix_points);
  lowered.name = op.name + "/float";
  lowered.output.name = lowered.name;
  Op fix;
  fix.name = op.name;
  fix.type = "fix";
  fix.attrs["fix_point"] = std::int32_t{fp};
  fix.attrs["bit_width"] = std::int32_t{8};
  fix.attrs["if_signed"] = true;
  fix.attrs["round_mode"] = std::string("DPU_ROUND");
  fix.args = {OpArg{"input", {lowered.name}}};
  fix.output = float32_value(op.output.name, op.output.shape);
  out.add_op(std::move(lowered));
  out.add_op(std::move(fix));
}

TensorDesc float32_value(std::string name, std::vector<std::int64_t> shape) {
  TensorDesc t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.data_type = DataType::Float;
  t.bit_width = 32;
  return t;
}

}  // namespace dpushard
