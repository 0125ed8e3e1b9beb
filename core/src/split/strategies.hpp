#pragma once
// The strategies' planners. Each turns the unit graph into a partition for `nodes` node
// slots, or says why it cannot (`why_not`), so auto can compare what is possible.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "partition.hpp"

namespace dpushard::split {

struct StrategyInput {
  const UnitGraph& graph;
  const CostModel& cost;
  int nodes = 1;
  Objective objective = Objective::Latency;
  bool output_fix = true;
  double min_parallel_fraction = 0.05;
  // Each node's board (mixed boards); empty: every node is `cost`'s.
  NodeModels models = {};
  // Requested pipeline cuts: unit positions (pipeline_cut_for); empty: the planner chooses.
  std::vector<std::size_t> cuts = {};
  // A hybrid's replica count (--replicas); 0: every count.
  int replicas = 0;

  const NodeModels* node_models() const { return models.empty() ? nullptr : &models; }
  // Fragments node `node` runs at once (its DPU cores).
  int cores_of(int node) const { return models.empty() ? 1 : models.cores_of(node, cost); }
  double speed_of(int node) const { return models.speed_of(node); }
  // Every node the same board at the same speed: nodes are interchangeable.
  bool uniform_boards() const {
    for (int n = 1; n < static_cast<int>(models.cost.size()); ++n)
      if (&models.at(n, cost) != &models.at(0, cost) || speed_of(n) != speed_of(0)) return false;
    return true;
  }
};

// Node slots for strategies that give each fragment one node: node n appears once per DPU
// core it has (consecutively), so a 3-core ZCU102 can run three fragments at once. One
// single-core board per node (and no node models): the nodes themselves. `order` lists
// the nodes in the order their slots come.
std::vector<int> node_slots(const StrategyInput& in, const std::vector<int>& order);

// Where a cut requested after op `op` lands: the position (in graph.order()) of the last
// unit before it. A cut inside a unit moves to the unit's end (its closing fix) and records
// why in `adjustments`; throws dpushard::Error when the model cannot be cut at all.
std::size_t pipeline_cut_for(const UnitGraph& graph, const std::string& op,
                             std::vector<PlanAdjustment>& adjustments);

// `replicas` copies of `inner` (a partition of an inner plan, strategy_table.hpp's
// inner_min_replicas, for `nodes_per_replica` nodes, one node per fragment), replica r on
// nodes r * nodes_per_replica + n (strategy_hybrid.cpp).
Partition plan_hybrid(const Partition& inner, int replicas, int nodes_per_replica);

// What a strategy proposes for an input: a partition, or why it has none.
struct Proposal {
  std::optional<Partition> partition;
  std::string why_not;
  std::string inner_strategy;  // a composite's (hybrid's) inner plan
  int replicas = 0;            // and its replica count
};

// One proposal: `p`, or why there is none.
std::vector<Proposal> one_proposal(std::optional<Partition> p, std::string why_not = "");

// A strategy's planner, registered under its row's name in the strategy table
// (dpushard/plan/strategy_table.hpp): its proposals for `in`, one (a composite: one per replica
// count and inner plan). A hybrid asks the planners of its inner plans for one each.
struct StrategyPlanner {
  std::string name;
  std::vector<Proposal> (*propose)(const StrategyInput& in) = nullptr;
};

// Every planner: each core/src/split/strategy_<stem>.cpp defines `StrategyPlanner
// strategy_<stem>()`, and the build generates the list that calls them (CMakeLists.txt,
// strategy_planners.cpp.in), so a strategy is its file and its table row.
const std::vector<StrategyPlanner>& strategy_planners();
// The planner registered under `name`; throws dpushard::Error when there is none.
const StrategyPlanner& planner_for(std::string_view name);

}  // namespace dpushard::split
