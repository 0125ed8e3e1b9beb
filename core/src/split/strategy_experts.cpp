// Experts: the stem up to a fork, the fork-join's branches spread over the nodes, the join
// and everything after it in the tail.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include "fork_join.hpp"
#include "strategies.hpp"

namespace dpushard::split {
namespace {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
  return buf;
}

std::string branch_label(const UnitGraph& graph, const std::vector<UnitId>& branch,
                         double seconds) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%zu units, %.3g ms", branch.size(), seconds * 1e3);
  return "'" + unit_name(graph, branch.front()) + "' .. '" + unit_name(graph, branch.back()) +
         "' (" + buf + ")";
}

}  // namespace

std::optional<Partition> plan_experts(const StrategyInput& in, std::string& why_not) {
  const UnitGraph& graph = in.graph;
  if (in.nodes < 2) {
    why_not = "one node";
    return std::nullopt;
  }
  const auto fjs = find_fork_joins(graph);
  if (fjs.empty()) {
    why_not = "no fork-join: no op feeds two or more branches that meet again";
    return std::nullopt;
  }
  const ForkJoin& fj = fjs.front();
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
  std::vector<char> role(nu, 't');  // 's' stem, 'b' branch, 't' tail, 'i' model input
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
  std::vector<UnitId> stem, tail;
  for (UnitId u : graph.order()) {
    if (graph.unit(u).is_input) {
      role[u] = 'i';
    } else if (role[u] == 's') {
      stem.push_back(u);
    } else if (role[u] == 't') {
      tail.push_back(u);
    }
  }
  double stem_seconds = 0, tail_seconds = 0;
  for (UnitId u : stem) stem_seconds += graph.unit(u).seconds;
  for (UnitId u : tail) tail_seconds += graph.unit(u).seconds;

  std::vector<std::size_t> by_cost(fj.branches.size());
  std::iota(by_cost.begin(), by_cost.end(), std::size_t{0});
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](std::size_t a, std::size_t b) {
    return fj.branch_seconds[a] > fj.branch_seconds[b];
  });

  const int n = in.nodes;
  // Branches go to node slots (one per DPU core: a 3-core board runs three expert fragments
  // at once), each slot's load counted at its node's speed.
  std::vector<int> listed(static_cast<std::size_t>(n));
  std::iota(listed.begin(), listed.end(), 0);
  const std::vector<int> slots = node_slots(in, listed);
  const std::size_t ns = slots.size();
  std::vector<std::size_t> first_slot(static_cast<std::size_t>(n), 0);
  for (std::size_t k = ns; k-- > 0;) first_slot[static_cast<std::size_t>(slots[k])] = k;
  bool uniform = true;  // every node at speed 1: LPT exactly as for one kind of board
  for (int node = 0; node < n; ++node) uniform = uniform && in.speed_of(node) == 1.0;
  std::optional<Partition> best;
  PlanPrediction best_prediction;
  for (int s = 0; s < n; ++s) {
    if (stem.empty() && s > 0) break;
    for (int t = 0; t < n; ++t) {
      if (tail.empty() && t > 0) break;
      // LPT: the largest branch first, each to the slot where it would finish first (its
      // node's speed). For throughput the stem and tail count as load on their nodes; for
      // latency they run before and after the branches, so only the branches are balanced.
      std::vector<double> load(ns, 0.0);
      if (in.objective == Objective::Throughput) {
        load[first_slot[static_cast<std::size_t>(s)]] += stem_seconds;
        load[first_slot[static_cast<std::size_t>(t)]] += tail_seconds;
      }
      std::vector<std::vector<std::size_t>> held(ns);
      for (std::size_t b : by_cost) {
        std::size_t k = 0;
        double soonest = 0;
        for (std::size_t j = 0; j < ns; ++j) {
          const double done =
              uniform ? load[j] : (load[j] + fj.branch_seconds[b]) / in.speed_of(slots[j]);
          if (j == 0 || done < soonest) {
            soonest = done;
            k = j;
          }
        }
        load[k] += fj.branch_seconds[b];
        held[k].push_back(b);
      }
      Partition p;
      p.strategy = "experts";
      p.structure = describe(graph, fj);
      if (!stem.empty()) p.fragments.push_back({"stem", "stem", stem, {s}, {}});
      for (std::size_t k = 0; k < ns; ++k) {
        auto& mine = held[k];
        if (mine.empty()) continue;
        std::sort(mine.begin(), mine.end());
        FragmentPart part{"experts" + std::to_string(k), "experts", {}, {slots[k]}, {}};
        for (std::size_t b : mine) {
          part.units.insert(part.units.end(), fj.branches[b].begin(), fj.branches[b].end());
          part.branches.push_back(branch_label(graph, fj.branches[b], fj.branch_seconds[b]));
        }
        std::sort(part.units.begin(), part.units.end(),
                  [&](UnitId a, UnitId b) { return graph.position(a) < graph.position(b); });
        p.fragments.push_back(std::move(part));
      }
      if (!tail.empty()) p.fragments.push_back({"tail", "tail", tail, {t}, {}});
      // Stem and tail go where they move the fewest bytes; the objective breaks ties.
      const auto est = estimate(graph, p, in.cost, in.output_fix, nullptr, in.node_models());
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
  if (fj.branches.size() < ns)
    best->adjustments.push_back(
        {"idle_nodes", "", "",
         std::to_string(fj.branches.size()) + " branches on " + std::to_string(n) + " nodes" +
             (ns != static_cast<std::size_t>(n) ? " (" + std::to_string(ns) + " DPU cores)"
                                                : std::string()) +
             ": nodes without a branch hold only the stem or tail, or stay idle"});
  return best;
}

}  // namespace dpushard::split
