#pragma once
// The strategies. Each turns the unit graph into a partition for `nodes` node slots, or
// says why it cannot (`why_not`), so auto can compare what is possible.

#include <optional>
#include <string>
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

// Every node runs the whole model (data parallel).
Partition plan_replicate(const StrategyInput& in);

// Stages: contiguous runs of a topological order, cut wherever the predicted cost balances
// best (the tensors crossing a cut priced on the links), whatever set of tensors is live
// there (pipeline_cuts.hpp). `cuts` are requested unit positions (see pipeline_cut_for);
// empty: choose.
std::optional<Partition> plan_pipeline(const StrategyInput& in,
                                       const std::vector<std::size_t>& cuts, std::string& why_not);

// Where a cut requested after op `op` lands: the position (in graph.order()) of the last
// unit before it. A cut inside a unit moves to the unit's end (its closing fix) and records
// why in `adjustments`; throws dpushard::Error when the model cannot be cut at all.
std::size_t pipeline_cut_for(const UnitGraph& graph, const std::string& op,
                             std::vector<PlanAdjustment>& adjustments);

// Stem / branches / tail around the most parallel fork-join, branches spread over the nodes
// (LPT), stem and tail placed to minimise the objective and then the bytes moved.
std::optional<Partition> plan_experts(const StrategyInput& in, std::string& why_not);

// Experts whose branches are themselves pipelined: with more node slots than branches, the
// slots beyond one per branch go to the branches with the most time per stage, and each
// such branch runs as a pipeline over its slots (strategy_pipelined_experts.cpp).
std::optional<Partition> plan_pipelined_experts(const StrategyInput& in, std::string& why_not);

// `replicas` copies of `inner` (an experts, pipeline or pipelined-experts partition for
// `nodes_per_replica` nodes, one node per fragment), replica r on nodes
// r * nodes_per_replica + n (hybrid.cpp). One replica: `inner` itself, named a hybrid.
Partition plan_hybrid(const Partition& inner, int replicas, int nodes_per_replica);

// Every hybrid (only those of R = `replicas` when it is not 0): the pipelined experts on all
// the nodes (R = 1), and for every R >= 2 replicas of k = in.nodes / R >= 2 nodes each (the
// in.nodes - R x k nodes left over stay idle) R copies of the experts, the pipeline and the
// pipelined-experts plan for k nodes (chosen for in.objective, the pipeline's cuts its own);
// or why that inner plan is not possible (replicas of pipelined experts only where they
// are). Empty: one node.
struct HybridOption {
  int replicas = 0;
  std::string inner_strategy;  // "experts", "pipeline" or "pipelined-experts"
  std::optional<Partition> partition;
  std::string why_not;
};
std::vector<HybridOption> plan_hybrids(const StrategyInput& in, int replicas);

}  // namespace dpushard::split
