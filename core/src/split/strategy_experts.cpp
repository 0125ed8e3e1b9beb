// Experts: the stem up to a fork, the fork-join's branches spread over the nodes, the join
// and everything after it in the tail.
#include <algorithm>
#include <numeric>

#include "experts_layout.hpp"

namespace dpushard::split {

namespace {

// The branches, largest first (the fork-join's order on ties).
std::vector<std::size_t> branches_by_cost(const ForkJoin& fj) {
  std::vector<std::size_t> by_cost(fj.branches.size());
  std::iota(by_cost.begin(), by_cost.end(), std::size_t{0});
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](std::size_t a, std::size_t b) {
    return fj.branch_seconds[a] > fj.branch_seconds[b];
  });
  return by_cost;
}

// LPT: the largest branch first, each to the slot where it would finish first (its node's
// speed; `uniform`: every node at speed 1, LPT exactly as for one kind of board), from the
// slots' starting `load`. The branches each slot holds.
std::vector<std::vector<std::size_t>> lpt_branches(const StrategyInput& in, const ForkJoin& fj,
                                                   const std::vector<std::size_t>& by_cost,
                                                   const std::vector<int>& slots, bool uniform,
                                                   std::vector<double> load) {
  const std::size_t ns = slots.size();
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
  return held;
}

// One "experts<k>" fragment per slot that holds branches, its units in the graph's order.
std::vector<FragmentPart> branch_fragments(const UnitGraph& graph, const ForkJoin& fj,
                                           const std::vector<int>& slots,
                                           std::vector<std::vector<std::size_t>> held) {
  std::vector<FragmentPart> parts;
  for (std::size_t k = 0; k < slots.size(); ++k) {
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
    parts.push_back(std::move(part));
  }
  return parts;
}

std::optional<Partition> plan_experts(const StrategyInput& in, std::string& why_not) {
  const auto layout = experts_layout(in, why_not);
  if (!layout) return std::nullopt;
  const ForkJoin& fj = layout->fork_join;
  const std::vector<std::size_t> by_cost = branches_by_cost(fj);
  const int n = in.nodes;
  // Branches go to node slots (one per DPU core: a 3-core board runs three expert fragments
  // at once), each slot's load counted at its node's speed.
  std::vector<int> listed(static_cast<std::size_t>(n));
  std::iota(listed.begin(), listed.end(), 0);
  const std::vector<int> slots = node_slots(in, listed);
  const std::size_t ns = slots.size();
  std::vector<std::size_t> first_slot(static_cast<std::size_t>(n), 0);
  for (std::size_t k = ns; k-- > 0;) first_slot[static_cast<std::size_t>(slots[k])] = k;
  bool uniform = true;  // every node at speed 1
  for (int node = 0; node < n; ++node) uniform = uniform && in.speed_of(node) == 1.0;
  // For throughput the stem and tail count as load on their nodes; for latency they run
  // before and after the branches, so only the branches are balanced.
  auto spread = [&](int s, int t) {
    std::vector<double> load(ns, 0.0);
    if (in.objective == Objective::Throughput) {
      load[first_slot[static_cast<std::size_t>(s)]] += layout->stem_seconds;
      load[first_slot[static_cast<std::size_t>(t)]] += layout->tail_seconds;
    }
    return branch_fragments(in.graph, fj, slots,
                            lpt_branches(in, fj, by_cost, slots, uniform, std::move(load)));
  };
  // Each branch fragment has one node, so they occupy at most one node per branch.
  Partition best = place_stem_and_tail(in, *layout, describe(in.graph, fj), spread,
                                       static_cast<int>(fj.branches.size()));
  if (fj.branches.size() < ns)
    best.adjustments.push_back(
        {"idle_nodes", "", "",
         std::to_string(fj.branches.size()) + " branches on " + std::to_string(n) + " nodes" +
             (ns != static_cast<std::size_t>(n) ? " (" + std::to_string(ns) + " DPU cores)"
                                                : std::string()) +
             ": nodes without a branch hold only the stem or tail, or stay idle"});
  return best;
}

std::vector<Proposal> propose_experts(const StrategyInput& in) {
  std::string why_not;
  std::optional<Partition> p = plan_experts(in, why_not);
  return one_proposal(std::move(p), why_not);
}

}  // namespace

StrategyPlanner strategy_experts() { return {"experts", &propose_experts}; }

}  // namespace dpushard::split
