#include "fork_join.hpp"

#include <algorithm>
#include <cstdio>

namespace dpushard::split {
namespace {

// Immediate dominators over a DAG given in topological order (index 0 is the single
// virtual entry). Cooper, Harvey and Kennedy's intersection on topological positions.
std::vector<std::size_t> immediate_dominators(const std::vector<std::vector<std::size_t>>& preds) {
  const std::size_t n = preds.size();
  std::vector<std::size_t> idom(n, 0);
  for (std::size_t v = 1; v < n; ++v) {
    if (preds[v].empty()) continue;  // unreachable from the entry
    std::size_t d = preds[v].front();
    for (std::size_t p : preds[v]) {
      std::size_t a = d, b = p;
      while (a != b) {
        while (a > b) a = idom[a];
        while (b > a) b = idom[b];
      }
      d = a;
    }
    idom[v] = d;
  }
  return idom;
}

}  // namespace

const std::string& unit_name(const UnitGraph& graph, UnitId unit) {
  const auto& ops = graph.graph().ops();
  const auto& members = graph.unit(unit).ops;
  for (auto it = members.rbegin(); it != members.rend(); ++it)
    if (ops[*it].type == "fix") return ops[*it].name;
  return ops[members.back()].name;
}

std::vector<ForkJoin> find_fork_joins(const UnitGraph& graph) {
  const auto& order = graph.order();
  const std::size_t m = order.size();
  // Node numbering: 0 = virtual source, 1..m = units in topological order, m+1 = sink.
  const std::size_t sink = m + 1;
  std::vector<std::vector<std::size_t>> preds(m + 2), succs(m + 2);
  std::vector<bool> feeds_output(graph.units().size(), false);
  for (const CrossTensor& t : graph.tensors())
    if (t.model_output) feeds_output[t.producer] = true;
  for (std::size_t i = 0; i < m; ++i) {
    const Unit& u = graph.unit(order[i]);
    for (UnitId p : u.preds) preds[i + 1].push_back(graph.position(p) + 1);
    if (u.preds.empty()) {
      preds[i + 1].push_back(0);
      succs[0].push_back(i + 1);
    }
    for (UnitId s : u.succs) succs[i + 1].push_back(graph.position(s) + 1);
    if (u.succs.empty() || feeds_output[order[i]]) succs[i + 1].push_back(sink);
  }
  for (std::size_t v = 1; v <= m; ++v)
    for (std::size_t s : succs[v])
      if (s == sink) preds[sink].push_back(v);
  if (preds[sink].empty()) return {};
  // Post-dominators: dominators of the reversed graph, numbered from the sink.
  std::vector<std::vector<std::size_t>> rpreds(m + 2);
  for (std::size_t v = 0; v <= sink; ++v)
    for (std::size_t s : succs[v]) rpreds[sink - v].push_back(sink - s);
  rpreds[0].clear();
  const auto ridom = immediate_dominators(rpreds);

  std::vector<ForkJoin> found;
  for (std::size_t f = 1; f <= m; ++f) {
    if (succs[f].size() < 2) continue;
    const std::size_t j = sink - ridom[sink - f];
    // Region: everything reachable from the fork before the join.
    std::vector<bool> in_region(m + 2, false);
    std::vector<std::size_t> stack = {f};
    while (!stack.empty()) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (std::size_t s : succs[v])
        if (s != j && s != sink && !in_region[s]) {
          in_region[s] = true;
          stack.push_back(s);
        }
    }
    // Single entry: every region unit reads only the region, the fork or model inputs.
    bool clean = true;
    std::vector<std::size_t> region;
    for (std::size_t v = 1; v <= m && clean; ++v) {
      if (!in_region[v]) continue;
      region.push_back(v);
      for (std::size_t p : preds[v])
        if (p != f && !in_region[p] && !(p > 0 && graph.unit(order[p - 1]).is_input)) clean = false;
    }
    if (!clean || region.size() < 2) continue;
    // Branches: connected components of the region.
    std::vector<int> comp(m + 2, -1);
    int comps = 0;
    for (std::size_t start : region) {
      if (comp[start] != -1) continue;
      std::vector<std::size_t> todo = {start};
      comp[start] = comps;
      while (!todo.empty()) {
        const std::size_t v = todo.back();
        todo.pop_back();
        for (const auto* next : {&succs[v], &preds[v]})
          for (std::size_t w : *next)
            if (w <= m && w > 0 && in_region[w] && comp[w] == -1) {
              comp[w] = comps;
              todo.push_back(w);
            }
      }
      ++comps;
    }
    if (comps < 2) continue;
    ForkJoin fj;
    fj.fork = order[f - 1];
    if (j != sink) fj.join = order[j - 1];
    fj.branches.resize(static_cast<std::size_t>(comps));
    fj.branch_seconds.assign(static_cast<std::size_t>(comps), 0.0);
    for (std::size_t v : region) {
      const auto c = static_cast<std::size_t>(comp[v]);
      fj.branches[c].push_back(order[v - 1]);
      fj.branch_seconds[c] += graph.unit(order[v - 1]).seconds;
    }
    double sum = 0, largest = 0;
    for (double s : fj.branch_seconds) {
      sum += s;
      largest = std::max(largest, s);
    }
    fj.parallel_seconds = sum - largest;
    found.push_back(std::move(fj));
  }
  std::stable_sort(found.begin(), found.end(), [](const ForkJoin& a, const ForkJoin& b) {
    return a.parallel_seconds > b.parallel_seconds;
  });
  return found;
}

std::string describe(const UnitGraph& graph, const ForkJoin& fj) {
  std::string text = "fork at '" + unit_name(graph, fj.fork) + "', ";
  text += fj.join ? "join at '" + unit_name(graph, *fj.join) + "'" : std::string("no join");
  text += ", " + std::to_string(fj.branches.size()) + " branches (";
  for (std::size_t i = 0; i < fj.branch_seconds.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.3g ms", i ? ", " : "", fj.branch_seconds[i] * 1e3);
    text += buf;
  }
  return text + ")";
}

}  // namespace dpushard::split
