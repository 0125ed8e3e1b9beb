// The real XIR's view of a graph as a dpushard::Graph (xir_view.hpp).

#include "xir_view.hpp"

#include <xir/attrs/attrs.hpp>
#include <xir/op/op.hpp>
#include <xir/op/op_def.hpp>
#include <xir/tensor/tensor.hpp>

#include <algorithm>
#include <map>
#include <typeinfo>

#include "dpushard/base/error.hpp"

namespace dpushard::vart_test {
namespace {

// XIR stores bytes as std::vector<char>; dpushard as Bytes.
Bytes bytes_of(const std::vector<char>& v) { return Bytes{std::string(v.begin(), v.end())}; }

template <typename T>
bool holds(const xir::any& value) {
  return value.type() == typeid(T);
}

template <typename T>
StringMap<T> string_map(const std::map<std::string, T>& m) {
  return {m.begin(), m.end()};
}

}  // namespace

AttrValue attr_from_xir(const xir::any& v) {
  using std::any_cast;
  using std::int32_t, std::int64_t, std::map, std::string, std::uint32_t, std::uint64_t,
      std::vector;
  if (holds<bool>(v)) return any_cast<bool>(v);
  if (holds<int32_t>(v)) return any_cast<int32_t>(v);
  if (holds<uint32_t>(v)) return any_cast<uint32_t>(v);
  if (holds<int64_t>(v)) return any_cast<int64_t>(v);
  if (holds<uint64_t>(v)) return any_cast<uint64_t>(v);
  if (holds<float>(v)) return any_cast<float>(v);
  if (holds<double>(v)) return any_cast<double>(v);
  if (holds<string>(v)) return any_cast<string>(v);
  if (holds<vector<char>>(v)) return bytes_of(any_cast<vector<char>>(v));
  if (holds<vector<bool>>(v)) return any_cast<vector<bool>>(v);
  if (holds<vector<int32_t>>(v)) return any_cast<vector<int32_t>>(v);
  if (holds<vector<uint32_t>>(v)) return any_cast<vector<uint32_t>>(v);
  if (holds<vector<int64_t>>(v)) return any_cast<vector<int64_t>>(v);
  if (holds<vector<uint64_t>>(v)) return any_cast<vector<uint64_t>>(v);
  if (holds<vector<float>>(v)) return any_cast<vector<float>>(v);
  if (holds<vector<double>>(v)) return any_cast<vector<double>>(v);
  if (holds<vector<string>>(v)) return any_cast<vector<string>>(v);
  if (holds<vector<vector<char>>>(v)) {
    vector<Bytes> out;
    for (const auto& b : any_cast<vector<vector<char>>>(v)) out.push_back(bytes_of(b));
    return out;
  }
  if (holds<map<string, int32_t>>(v)) return string_map(any_cast<map<string, int32_t>>(v));
  if (holds<map<string, uint32_t>>(v)) return string_map(any_cast<map<string, uint32_t>>(v));
  if (holds<map<string, int64_t>>(v)) return string_map(any_cast<map<string, int64_t>>(v));
  if (holds<map<string, uint64_t>>(v)) return string_map(any_cast<map<string, uint64_t>>(v));
  if (holds<map<string, string>>(v)) return string_map(any_cast<map<string, string>>(v));
  if (holds<map<string, vector<char>>>(v)) {
    StringMap<Bytes> out;
    for (const auto& [k, b] : any_cast<map<string, vector<char>>>(v)) out[k] = bytes_of(b);
    return out;
  }
  if (holds<map<string, vector<int32_t>>>(v))
    return string_map(any_cast<map<string, vector<int32_t>>>(v));
  if (holds<map<string, vector<uint32_t>>>(v))
    return string_map(any_cast<map<string, vector<uint32_t>>>(v));
  if (holds<map<string, vector<int64_t>>>(v))
    return string_map(any_cast<map<string, vector<int64_t>>>(v));
  if (holds<map<string, vector<uint64_t>>>(v))
    return string_map(any_cast<map<string, vector<uint64_t>>>(v));
  if (holds<map<string, vector<string>>>(v))
    return string_map(any_cast<map<string, vector<string>>>(v));
  throw Error(std::string("XIR attribute of C++ type ") + v.type().name() + " has no xmodel field");
}

AttrMap attrs_from_xir(const xir::Attrs* attrs) {
  AttrMap out;
  if (attrs == nullptr) return out;
  for (const std::string& key : attrs->get_keys()) out[key] = attr_from_xir(attrs->get_attr(key));
  return out;
}

Subgraph subgraph_from_xir(const xir::Subgraph& subgraph) {
  Subgraph out;
  out.name = subgraph.get_name();
  for (const xir::Op* op : subgraph.get_ops()) out.ops.push_back(op->get_name());
  std::sort(out.ops.begin(), out.ops.end());
  if (subgraph.has_attrs()) out.attrs = attrs_from_xir(subgraph.get_attrs().get());
  for (const xir::Subgraph* child : subgraph.get_children())
    out.children.push_back(subgraph_from_xir(*child));
  std::sort(out.children.begin(), out.children.end(),
            [](const Subgraph& a, const Subgraph& b) { return a.name < b.name; });
  return out;
}

Graph graph_from_xir(const xir::Graph& graph) {
  Graph out(graph.get_name());
  for (const xir::Op* op : graph.topological_sort()) {
    Op o;
    o.name = op->get_name();
    o.type = op->get_type();
    if (op->has_attrs()) o.attrs = attrs_from_xir(op->get_attrs().get());
    for (const auto& [arg, producers] : op->get_input_ops()) {
      if (producers.empty()) continue;
      OpArg a;
      a.name = arg;
      for (const xir::Op* p : producers) a.producers.push_back(p->get_name());
      o.args.push_back(std::move(a));
    }
    const xir::Tensor* t = op->get_output_tensor();
    o.output.name = t->get_name();
    for (const std::int32_t d : t->get_shape()) o.output.shape.push_back(d);
    o.output.data_type = static_cast<DataType>(t->get_data_type().type);
    o.output.bit_width = t->get_data_type().bit_width;
    o.output.attrs = attrs_from_xir(t->get_attrs().get());
    out.add_op(std::move(o));
  }
  if (graph.has_attrs()) out.attrs() = attrs_from_xir(graph.get_attrs().get());
  const xir::Subgraph* root = graph.get_root_subgraph();
  if (root != nullptr && root->get_children_num() > 0) out.root() = subgraph_from_xir(*root);
  return out;
}

StringMap<AttrMap> op_defaults_from_xir(const xir::Graph& graph) {
  StringMap<AttrMap> out;
  for (const xir::Op* op : graph.get_ops()) {
    AttrMap& defaults = out[op->get_name()];
    const xir::OpDef* def = op->get_opdef();
    if (def == nullptr) continue;
    for (const xir::AttrDef& attr : def->attrs())
      if (attr.default_value.has_value()) try {
          defaults[attr.name] = attr_from_xir(attr.default_value);
        } catch (const Error&) {
          // a default of a type the xmodel format cannot hold: never written, never compared
        }
  }
  return out;
}

std::set<std::string> ops_xir_does_not_define(const xir::Graph& graph) {
  std::set<std::string> out;
  for (const xir::Op* op : graph.get_ops()) {
    const xir::OpDef* def = op->get_opdef();
    if (def != nullptr && def->annotation() == "This operator is not defined by XIR.")
      out.insert(op->get_name());
  }
  return out;
}

}  // namespace dpushard::vart_test
