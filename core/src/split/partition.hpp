#pragma once
// What a strategy decides: which units form which fragment, in plan order, on which node
// slots; and the unit-level prediction of latency, throughput and bytes used to choose
// between candidate partitions before any fragment is extracted.

#include <string>
#include <vector>

#include "dpushard/plan/plan_format.hpp"
#include "dpushard/split/split.hpp"
#include "unit_graph.hpp"

namespace dpushard::split {

struct FragmentPart {
  std::string name;
  std::string role;           // "model", "stem", "experts", "tail", "stage"
  std::vector<UnitId> units;  // owned units (never model inputs)
  std::vector<int> nodes;     // node slots (several only for replicate)
  std::vector<std::string> branches;
};

struct Partition {
  std::string strategy;
  std::string structure;                // one line for plan.yaml
  std::vector<FragmentPart> fragments;  // plan order
  std::vector<PlanAdjustment> adjustments;
  // Replicate on boards of unequal speed: each replica's share of the frames (Plan's
  // frame_share, replica_cycle); empty: equal shares.
  std::vector<int> frame_share;
};

// The boards a plan runs on (docs/splitting.md "Mixed boards"): node slot n's cost model
// (its target's timing model; all the same for one target) and its speed relative to the
// unit graph's cost model (the whole model's time there over its time on node n), which
// the strategies' unit-level search scales unit times by. Empty: every node is the unit
// graph's cost model at speed 1.
struct NodeModels {
  std::vector<const CostModel*> cost;  // per node slot
  std::vector<double> speed;           // per node slot, > 0

  bool empty() const { return cost.empty(); }
  const CostModel& at(int node, const CostModel& fallback) const {
    const auto n = static_cast<std::size_t>(node);
    return n < cost.size() && cost[n] != nullptr ? *cost[n] : fallback;
  }
  double speed_of(int node) const {
    const auto n = static_cast<std::size_t>(node);
    return n < speed.size() ? speed[n] : 1.0;
  }
  // DPU cores of node `node`: the fragments it can run at once (its slots).
  int cores_of(int node, const CostModel& fallback) const { return at(node, fallback).dpu_cores(); }
  // The first `k` nodes (a hybrid's replica).
  NodeModels first(int k) const;
};

// Each fragment's price on each of its nodes: prices[f][i] on partition.fragments[f].nodes[i].
using FragmentPrices = std::vector<std::vector<CostModel::FragmentLoad>>;

struct PartitionEstimate {
  PlanPrediction predicted;
  std::vector<double> fragment_seconds;  // compute per frame, naive penalties included
};

// Unit-level prediction for `partition` (see docs/splitting.md, "Cost model"). With
// `fragment_loads` (per fragment and node: the node's cost model's price of the extracted
// fragment, naive penalties included, split over the board's engines), those replace the
// unit sums (divided by the node's speed). `nodes` gives each node its board (cores);
// null or empty: every node is `cost`.
PartitionEstimate estimate(const UnitGraph& graph, const Partition& partition,
                           const CostModel& cost, bool output_fix,
                           const FragmentPrices* fragment_loads = nullptr,
                           const NodeModels* nodes = nullptr);

// Every fragment of `extraction` priced on each of its nodes (fragment_load of the node's
// cost model; one call per fragment and distinct cost model).
struct Extraction;
FragmentPrices price_fragments(const Extraction& extraction, const Partition& partition,
                               const CostModel& cost, const NodeModels* nodes);

// True when `fix`, produced in fragment `producer_fragment`, crosses a --no-output-fix
// boundary without its fix (the naive split), given which fragment owns each unit.
bool naive_boundary(const UnitGraph& graph, const std::vector<int>& fragment_of_unit,
                    std::size_t fix, bool output_fix);

// fragment index of every unit (-1 for model inputs); throws when a unit is unassigned.
std::vector<int> fragment_of_units(const UnitGraph& graph, const Partition& partition);

// True when `a` beats `b` for the objective (ties: the other measure, then fewer bytes).
bool better_prediction(const PlanPrediction& a, const PlanPrediction& b, Objective objective);

// A single fragment holding the whole model on `nodes`.
Partition whole_model(const UnitGraph& graph, const std::string& strategy, std::vector<int> nodes);

}  // namespace dpushard::split
