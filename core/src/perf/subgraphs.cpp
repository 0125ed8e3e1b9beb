#include "subgraphs.hpp"

#include <algorithm>
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

Where other_side(Where side) { return side == Where::Dpu ? Where::Cpu : Where::Dpu; }

// Groups of `side` ops linked directly or through free ops, cut where the compiler must cut
// them: a subgraph runs as one launch, so no path may leave it through an op of the other
// side and come back (it would wait for itself). An op's stage is the largest number of
// other-side ops on a path from the inputs to it; ops are grouped only with ops of the
// same stage, which keeps every group convex (an excursion through the other side raises
// the stage of everything after it). A squeeze-excite block whose pool runs on the CPU thus
// splits the DPU work before and after it in two, as the compiler does.
int count_groups(const Graph& graph, const std::vector<Where>& where, Where side) {
  const auto& ops = graph.ops();
  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t i = 0; i < ops.size(); ++i) index.emplace(ops[i].name, i);
  const auto joins = [&](std::size_t i) { return where[i] == side || where[i] == Where::Free; };

  std::vector<int> stage(ops.size(), 0);
  for (std::size_t c : graph.topological_order())
    for (const auto& name : ops[c].all_producers()) {
      auto it = index.find(name);
      if (it == index.end()) continue;
      const std::size_t p = it->second;
      stage[c] = std::max(stage[c], stage[p] + (where[p] == other_side(side) ? 1 : 0));
    }

  DisjointSets sets(ops.size());
  for (std::size_t c = 0; c < ops.size(); ++c) {
    if (!joins(c)) continue;
    for (const auto& name : ops[c].all_producers()) {
      auto it = index.find(name);
      if (it != index.end() && joins(it->second) && stage[it->second] == stage[c])
        sets.unite(it->second, c);
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
