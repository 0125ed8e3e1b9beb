#include "subgraphs.hpp"

#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

namespace dpushard::perf {
namespace {

class DisjointSets {
 public:
  explicit DisjointSets(std::size_t n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
  }
  std::size_t find(std::size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  void unite(std::size_t a, std::size_t b) { parent_[find(a)] = find(b); }

 private:
  std::vector<std::size_t> parent_;
};

// Groups of `side` ops linked directly or through free ops.
int count_groups(const Graph& graph, const std::vector<Where>& where, Where side) {
  const auto& ops = graph.ops();
  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t i = 0; i < ops.size(); ++i) index.emplace(ops[i].name, i);
  const auto joins = [&](std::size_t i) { return where[i] == side || where[i] == Where::Free; };

  DisjointSets sets(ops.size());
  for (std::size_t c = 0; c < ops.size(); ++c) {
    if (!joins(c)) continue;
    for (const auto& name : ops[c].all_producers()) {
      auto it = index.find(name);
      if (it != index.end() && joins(it->second)) sets.unite(it->second, c);
    }
  }
  std::set<std::size_t> roots;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (where[i] == side) roots.insert(sets.find(i));
  return static_cast<int>(roots.size());
}

void collect_ops(const Subgraph& sg, std::set<std::string, std::less<>>& out) {
  out.insert(sg.ops.begin(), sg.ops.end());
  for (const auto& child : sg.children) collect_ops(child, out);
}

}  // namespace

SubgraphCount count_subgraphs(const Graph& graph, const std::vector<Where>& where) {
  return {count_groups(graph, where, Where::Dpu), count_groups(graph, where, Where::Cpu)};
}

SubgraphCount count_compiled_subgraphs(const Graph& graph, const std::vector<Where>& where) {
  if (!graph.root() || graph.root()->children.empty()) return count_subgraphs(graph, where);
  std::set<std::string, std::less<>> cpu_ops;
  for (std::size_t i = 0; i < graph.ops().size(); ++i)
    if (where[i] == Where::Cpu) cpu_ops.insert(graph.ops()[i].name);
  SubgraphCount count;
  for (const auto& child : graph.root()->children) {
    const std::string device = child.device();
    if (device == "DPU") {
      ++count.dpu;
    } else if (device == "CPU") {
      std::set<std::string, std::less<>> ops;
      collect_ops(child, ops);
      for (const auto& name : ops)
        if (cpu_ops.count(name) != 0) {
          ++count.cpu;
          break;
        }
    }
  }
  return count;
}

}  // namespace dpushard::perf
