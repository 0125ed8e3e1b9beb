#pragma once
// What a strategy decides: which units form which fragment, in plan order, on which node
// slots; and the unit-level prediction of latency, throughput and bytes used to choose
// between candidate partitions before any fragment is extracted.

#include <string>
#include <vector>

#include "dpushard/plan_format.hpp"
#include "dpushard/split.hpp"
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
};

struct PartitionEstimate {
  PlanPrediction predicted;
  std::vector<double> fragment_seconds;  // compute per frame, naive penalties included
};

// Unit-level prediction for `partition` (see docs/splitting.md, "Cost model"). With
// `fragment_loads` (one per fragment: the cost model's price of the extracted fragment,
// naive penalties included, split over the board's engines), those replace the unit sums.
PartitionEstimate estimate(const UnitGraph& graph, const Partition& partition,
                           const CostModel& cost, bool output_fix,
                           const std::vector<CostModel::FragmentLoad>* fragment_loads = nullptr);

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
