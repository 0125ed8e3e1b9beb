#include "automatic_form.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/attr.hpp"

namespace dpushard::xmodel {
namespace {

constexpr const char* kInput = "input";
constexpr const char* kShape = "shape";
constexpr const char* kDataType = "data_type";

// Every op type dpushard writes (builder, zoo, micro-models, ONNX import, quantizer, planner)
// checked against the 106 built-in definitions of XIR 3.5 (xir/op/built_in_ops.cpp): only
// layernorm is missing. tests/vart (XirReadback) checks this list against the real XIR.
const std::map<std::string, std::vector<std::string>, std::less<>>& table() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> types = {
      {"layernorm", {"input", "gamma", "beta"}},
  };
  return types;
}

std::string describe(const Op& op) { return "op '" + op.name + "' (" + op.type + ")"; }

std::string operand_list(const std::vector<std::string>& operands) {
  std::string out;
  for (const auto& name : operands) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::vector<std::int32_t> shape_attr(const Op& op) {
  std::vector<std::int32_t> shape;
  shape.reserve(op.output.shape.size());
  for (std::int64_t dim : op.output.shape) {
    if (dim < std::numeric_limits<std::int32_t>::min() ||
        dim > std::numeric_limits<std::int32_t>::max())
      throw Error(describe(op) + ": output dim " + std::to_string(dim) +
                  " does not fit the int32 'shape' attribute XIR requires for this type");
    shape.push_back(static_cast<std::int32_t>(dim));
  }
  return shape;
}

// The args that name at least one producer (files may list empty args).
std::vector<const OpArg*> used_args(const Op& op) {
  std::vector<const OpArg*> out;
  for (const OpArg& arg : op.args)
    if (!arg.producers.empty()) out.push_back(&arg);
  return out;
}

bool in_file_form(const Op& op) {
  const auto args = used_args(op);
  return op.attrs.contains(kShape) && op.attrs.contains(kDataType) &&
         std::all_of(args.begin(), args.end(), [](const OpArg* a) { return a->name == kInput; });
}

}  // namespace

const std::vector<std::string>* automatic_operands(std::string_view type) {
  const auto it = table().find(type);
  return it == table().end() ? nullptr : &it->second;
}

std::string xir_data_type_spelling(DataType type, std::int32_t bit_width) {
  const char* name = "UNKNOWN";
  switch (type) {
    case DataType::Int:
      name = "INT";
      break;
    case DataType::UInt:
      name = "UINT";
      break;
    case DataType::XInt:
      name = "XINT";
      break;
    case DataType::XUInt:
      name = "XUINT";
      break;
    case DataType::Float:
      name = "FLOAT";
      break;
    case DataType::BFloat:
      name = "BFLOAT";
      break;
    case DataType::Unknown:
      break;
  }
  return name + std::to_string(bit_width);
}

bool to_automatic_form(const Op& op, Op& out) {
  const std::vector<std::string>* operands = automatic_operands(op.type);
  if (operands == nullptr) return false;
  if (in_file_form(op)) {
    out = op;
    return true;
  }
  const std::string form = "XIR has no " + op.type + " op and reads it only with its operands " +
                           operand_list(*operands) + " in one 'input' arg";
  for (const char* reserved : {kShape, kDataType})
    if (op.attrs.contains(reserved))
      throw Error(describe(op) + ": attribute '" + reserved +
                  "' is the file's, not the IR's: " + form);
  const auto args = used_args(op);
  std::vector<std::string> producers;
  producers.reserve(operands->size());
  for (const std::string& name : *operands) {
    const auto it =
        std::find_if(args.begin(), args.end(), [&](const OpArg* a) { return a->name == name; });
    if (it == args.end() || (*it)->producers.size() != 1)
      throw Error(describe(op) + ": arg '" + name + "' needs exactly one producer, has " +
                  std::to_string(it == args.end() ? 0 : (*it)->producers.size()) + ": " + form);
    producers.push_back((*it)->producers.front());
  }
  for (const OpArg* arg : args)
    if (std::find(operands->begin(), operands->end(), arg->name) == operands->end())
      throw Error(describe(op) + ": arg '" + arg->name + "' has no place: " + form);
  out.name = op.name;
  out.type = op.type;
  out.attrs = op.attrs;
  out.attrs[kShape] = shape_attr(op);
  out.attrs[kDataType] = xir_data_type_spelling(op.output.data_type, op.output.bit_width);
  out.args = {OpArg{kInput, std::move(producers)}};
  out.output = op.output;
  return true;
}

void from_automatic_form(Op& op) {
  const std::vector<std::string>* operands = automatic_operands(op.type);
  if (operands == nullptr) return;
  const auto args = used_args(op);
  if (args.size() != 1 || args.front()->name != kInput ||
      args.front()->producers.size() != operands->size())
    return;
  const auto* shape = find_attr<std::vector<std::int32_t>>(op.attrs, kShape);
  const auto* data_type = find_attr<std::string>(op.attrs, kDataType);
  if (shape == nullptr || data_type == nullptr ||
      !std::equal(shape->begin(), shape->end(), op.output.shape.begin(), op.output.shape.end()) ||
      *data_type != xir_data_type_spelling(op.output.data_type, op.output.bit_width))
    return;
  std::vector<OpArg> named;
  named.reserve(operands->size());
  const std::vector<std::string> producers = args.front()->producers;
  for (std::size_t i = 0; i < operands->size(); ++i)
    named.push_back(OpArg{(*operands)[i], {producers[i]}});
  op.args = std::move(named);
  op.attrs.erase(kShape);
  op.attrs.erase(kDataType);
}

}  // namespace dpushard::xmodel
