#include "experts_layout.hpp"

#include <algorithm>
#include <cstdio>

namespace dpushard::split {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
  return buf;
}

std::string branch_label(const UnitGraph& graph, const std::vector<UnitId>& units, double seconds) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%zu units, %.3g ms", units.size(), seconds * 1e3);
  return "'" + unit_name(graph, units.front()) + "' .. '" + unit_name(graph, units.back()) + "' (" +
         buf + ")";
}

std::optional<ExpertsLayout> experts_layout(const StrategyInput& in, std::string& why_not) {
  const UnitGraph& graph = in.graph;
  if (in.nodes < 2) {
    why_not = "one node";
    return std::nullopt;
  }
  auto fjs = find_fork_joins(graph);
  if (fjs.empty()) {
    why_not = "no fork-join: no op feeds two or more branches that meet again";
    return std::nullopt;
  }
  ExpertsLayout layout;
  layout.fork_join = std::move(fjs.front());
  const ForkJoin& fj = layout.fork_join;
  const double total = std::max(graph.total_seconds(), 1e-12);
  if (fj.parallel_seconds / total < in.min_parallel_fraction) {
    why_not = "no fork-join worth splitting: the most parallel one (" + describe(graph, fj) +
              ") overlaps " + percent(fj.parallel_seconds / total) +
              " of the model's predicted time, under the " + percent(in.min_parallel_fraction) +
              " threshold";
    return std::nullopt;
  }
  // Stem: the fork and its ancestors. Tail: every other unit outside the branches.
  const std::size_t nu = graph.units().size();
  std::vector<char> role(nu, 't');  // 's' stem, 'b' branch, 't' tail
  std::vector<UnitId> stack = {fj.fork};
  while (!stack.empty()) {
    const UnitId u = stack.back();
    stack.pop_back();
    if (role[u] == 's') continue;
    role[u] = 's';
    for (UnitId p : graph.unit(u).preds) stack.push_back(p);
  }
  for (const auto& b : fj.branches)
    for (UnitId u : b) role[u] = 'b';
  for (UnitId u : graph.order()) {
    if (graph.unit(u).is_input) continue;
    if (role[u] == 's') {
      layout.stem.push_back(u);
      layout.stem_seconds += graph.unit(u).seconds;
    } else if (role[u] == 't') {
      layout.tail.push_back(u);
      layout.tail_seconds += graph.unit(u).seconds;
    }
  }
  return layout;
}

Partition place_stem_and_tail(const StrategyInput& in, const ExpertsLayout& layout,
                              const std::string& structure, const BranchParts& branches,
                              int branch_nodes) {
  std::optional<Partition> best;
  PlanPrediction best_prediction;
  const int places = in.uniform_boards() ? std::min(in.nodes, branch_nodes + 2) : in.nodes;
  for (int s = 0; s < places; ++s) {
    if (layout.stem.empty() && s > 0) break;
    for (int t = 0; t < places; ++t) {
      if (layout.tail.empty() && t > 0) break;
      Partition p;
      p.strategy = "experts";
      p.structure = structure;
      if (!layout.stem.empty()) p.fragments.push_back({"stem", "stem", layout.stem, {s}, {}});
      for (FragmentPart& part : branches(s, t)) p.fragments.push_back(std::move(part));
      if (!layout.tail.empty()) p.fragments.push_back({"tail", "tail", layout.tail, {t}, {}});
      const auto est = estimate(in.graph, p, in.cost, in.output_fix, nullptr, in.node_models());
      const auto& a = est.predicted;
      const auto& b = best_prediction;
      const bool fewer_bytes = best && a.wire_bytes_per_frame < b.wire_bytes_per_frame;
      const bool same_bytes = best && a.wire_bytes_per_frame == b.wire_bytes_per_frame;
      if (!best || fewer_bytes || (same_bytes && better_prediction(a, b, in.objective))) {
        best = std::move(p);
        best_prediction = est.predicted;
      }
    }
  }
  return std::move(*best);
}

}  // namespace dpushard::split
