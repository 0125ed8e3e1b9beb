#include "structure.hpp"

#include <string>
#include <unordered_map>

namespace dpushard::xmodel {
namespace {

constexpr const char* kRootName = "root";

// Records which leaf subgraph holds each op; rejects unknown and repeated ops.
void collect_leaf_ops(const Graph& graph, const Subgraph& subgraph,
                      std::unordered_map<std::string, const Subgraph*>& owner) {
  for (const auto& name : subgraph.ops) {
    if (graph.find(name) == nullptr)
      throw Error("subgraph '" + subgraph.name + "' names op '" + name +
                  "', which is not in the graph");
    if (!subgraph.children.empty()) continue;  // inner nodes may repeat their leaves' ops
    auto [it, inserted] = owner.emplace(name, &subgraph);
    if (!inserted)
      throw Error("op '" + name + "' is in two subgraphs, '" + it->second->name + "' and '" +
                  subgraph.name + "'");
  }
  for (const auto& child : subgraph.children) collect_leaf_ops(graph, child, owner);
}

}  // namespace

void check_structure(const Graph& graph) {
  if (graph.size() == 0) throw Error("graph '" + graph.name() + "' has no ops");
  for (const Op& op : graph.ops())
    for (const OpArg& arg : op.args)
      for (const auto& producer : arg.producers)
        if (graph.find(producer) == nullptr)
          throw Error("op '" + op.name + "' (" + op.type + "): arg '" + arg.name + "' names op '" +
                      producer + "', which is not in the graph");
  if (!graph.root()) return;
  std::unordered_map<std::string, const Subgraph*> owner;
  collect_leaf_ops(graph, *graph.root(), owner);
  for (const Op& op : graph.ops())
    if (!owner.count(op.name))
      throw Error("op '" + op.name + "' is in no subgraph of the tree rooted at '" +
                  graph.root()->name + "'");
}

Subgraph plain_root(const Graph& graph) {
  Subgraph root;
  root.name = kRootName;
  root.ops.reserve(graph.size());
  for (const Op& op : graph.ops()) root.ops.push_back(op.name);
  return root;
}

bool is_plain_root(const Subgraph& root, const Graph& graph) {
  if (root.name != kRootName || !root.attrs.empty() || !root.children.empty() ||
      root.ops.size() != graph.size())
    return false;
  for (std::size_t i = 0; i < root.ops.size(); ++i)
    if (root.ops[i] != graph.ops()[i].name) return false;
  return true;
}

}  // namespace dpushard::xmodel
