#pragma once
// Fork-join structures in any graph: a unit whose output feeds K >= 2 disjoint branches
// that meet again at one join unit (its immediate post-dominator). Found with dominators
// and post-dominators over the unit DAG, so it works on any model, not only zoo ones.

#include <optional>
#include <string>
#include <vector>

#include "unit_graph.hpp"

namespace dpushard::split {

struct ForkJoin {
  UnitId fork;
  std::optional<UnitId> join;                 // nullopt when the branches end at model outputs
  std::vector<std::vector<UnitId>> branches;  // each in topological order
  std::vector<double> branch_seconds;
  double parallel_seconds = 0;  // sum of the branches minus the largest: work that can overlap
};

// Every clean fork-join (single entry at the fork, single exit at the join, at least two
// non-empty branches), the most parallel work first.
std::vector<ForkJoin> find_fork_joins(const UnitGraph& graph);

// "fork at 'a', join at 'b', 3 branches (1.2 ms, 1.2 ms, 1.1 ms)".
std::string describe(const UnitGraph& graph, const ForkJoin& fj);

// The op that names a unit in messages: its last fix op, or its last op.
const std::string& unit_name(const UnitGraph& graph, UnitId unit);

}  // namespace dpushard::split
