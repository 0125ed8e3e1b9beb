#include "ir_writer.hpp"

#include <unordered_set>

#include "dpushard/graph/shape.hpp"

namespace dpushard::onnximport {

std::vector<std::int32_t> to_i32(const std::vector<std::int64_t>& values) {
  std::vector<std::int32_t> out;
  out.reserve(values.size());
  for (auto v : values) out.push_back(static_cast<std::int32_t>(v));
  return out;
}

std::string IrWriter::unique(const std::string& hint) {
  std::string base = hint.empty() ? std::string("op") : hint;
  std::string name = base;
  for (int i = 1; names_.count(name) || graph_.find(name) != nullptr; ++i)
    name = base + "_" + std::to_string(i);
  names_.insert(name);
  return name;
}

std::string IrWriter::data(const std::string& hint, const std::vector<std::int64_t>& shape) {
  return op(hint, "data", {}, {{"shape", to_i32(shape)}, {"data_type", std::string("FLOAT32")}});
}

std::string IrWriter::constant(const std::string& hint, const std::vector<std::int64_t>& shape,
                               const std::vector<float>& values) {
  Op c;
  c.name = unique(hint);
  c.type = "const";
  c.attrs = {{"shape", to_i32(shape)}, {"data_type", std::string("float32")}};
  set_const_values(c, values);
  c.output.name = c.name;
  c.output.shape = shape;
  const std::string name = c.name;
  graph_.add_op(std::move(c));
  return name;
}

std::string IrWriter::op(const std::string& hint, const std::string& type, std::vector<OpArg> args,
                         AttrMap attrs) {
  Op o;
  o.name = unique(hint);
  o.type = type;
  o.args = std::move(args);
  o.attrs = std::move(attrs);
  o.output.name = o.name;
  o.output.shape = infer_output_shape(graph_, o);
  const std::string name = o.name;
  graph_.add_op(std::move(o));
  return name;
}

const std::vector<std::int64_t>& IrWriter::shape(const std::string& op) const {
  return graph_.op(op).output.shape;
}

void IrWriter::prune(const std::vector<std::string>& outputs) {
  std::unordered_set<std::string> live;
  std::vector<std::string> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    std::string name = std::move(stack.back());
    stack.pop_back();
    if (!live.insert(name).second) continue;
    for (const auto& p : graph_.op(name).all_producers()) stack.push_back(p);
  }
  std::vector<std::string> dead;
  for (const Op& o : graph_.ops())
    if (!live.count(o.name) && o.type != "data") dead.push_back(o.name);
  for (const auto& name : dead) graph_.remove_op(name);
}

}  // namespace dpushard::onnximport
