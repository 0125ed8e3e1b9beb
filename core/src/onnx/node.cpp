#include "node.hpp"

#include <onnx/onnx_pb.h>

#include "dpushard/base/error.hpp"

namespace dpushard::onnximport {

std::string Node::who() const { return type + " node '" + name + "'"; }

std::int64_t Node::attr_int(const std::string& key, std::int64_t fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::int64_t>(&it->second)) return *v;
  throw Error(who() + ": attribute '" + key + "' is not an integer");
}

double Node::attr_float(const std::string& key, double fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  throw Error(who() + ": attribute '" + key + "' is not a float");
}

std::string Node::attr_string(const std::string& key, const std::string& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  throw Error(who() + ": attribute '" + key + "' is not a string");
}

std::vector<std::int64_t> Node::attr_ints(const std::string& key,
                                          const std::vector<std::int64_t>& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* v = std::get_if<std::vector<std::int64_t>>(&it->second)) return *v;
  throw Error(who() + ": attribute '" + key + "' is not a list of integers");
}

const ConstTensor& Node::attr_tensor(const std::string& key) const {
  auto it = attrs.find(key);
  if (it != attrs.end())
    if (const auto* v = std::get_if<ConstTensor>(&it->second)) return *v;
  throw Error(who() + ": missing tensor attribute '" + key + "'");
}

const std::string& Node::input(std::size_t i) const {
  static const std::string kNone;
  return i < inputs.size() ? inputs[i] : kNone;
}

Node node_from_proto(const onnx::NodeProto& proto) {
  Node node;
  node.type = proto.op_type();
  node.name = proto.name().empty() ? (proto.output_size() ? proto.output(0) : proto.op_type())
                                   : proto.name();
  if (!proto.domain().empty() && proto.domain() != "ai.onnx")
    throw Error(node.who() + ": operator domain '" + proto.domain() + "' is not supported");
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  for (const auto& a : proto.attribute()) {
    using AP = onnx::AttributeProto;
    switch (a.type()) {
      case AP::INT:
        node.attrs[a.name()] = std::int64_t{a.i()};
        break;
      case AP::FLOAT:
        node.attrs[a.name()] = static_cast<double>(a.f());
        break;
      case AP::STRING:
        node.attrs[a.name()] = a.s();
        break;
      case AP::INTS:
        node.attrs[a.name()] = std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
        break;
      case AP::FLOATS: {
        std::vector<double> fs;
        for (float f : a.floats()) fs.push_back(static_cast<double>(f));
        node.attrs[a.name()] = fs;
        break;
      }
      case AP::TENSOR:
        node.attrs[a.name()] = from_tensor_proto(a.t(), node.who() + " attribute " + a.name());
        break;
      default:
        break;  // graphs, sparse tensors, ...: any op that needs them is rejected later
    }
  }
  return node;
}

}  // namespace dpushard::onnximport
