#pragma once
// The experts' view of a model, shared by the experts strategy and the experts whose
// branches are pipelined: the most parallel fork-join worth splitting, its stem (the fork
// and its ancestors) and its tail (every other unit outside the branches).

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fork_join.hpp"
#include "strategies.hpp"

namespace dpushard::split {

struct ExpertsLayout {
  ForkJoin fork_join;
  std::vector<UnitId> stem, tail;  // in the graph's order
  double stem_seconds = 0, tail_seconds = 0;
};

// The layout, or why experts are not possible on `in` (one node, no fork-join, or none whose
// branches overlap at least in.min_parallel_fraction of the model's time).
std::optional<ExpertsLayout> experts_layout(const StrategyInput& in, std::string& why_not);

// Stem and tail on every pair of nodes (node 0 only for an empty one), around the branch
// fragments `branches(stem_node, tail_node)` makes for them: the partition that moves the
// fewest bytes, the objective breaking ties. `branch_nodes` bounds how many nodes the
// branch fragments occupy, lowest first: on uniform boards every node past them is like
// every other idle node, so the stem and tail are tried on those and on two idle ones only
// (the same plan; on 1,000 nodes 25 pairs instead of a million).
using BranchParts = std::function<std::vector<FragmentPart>(int stem_node, int tail_node)>;
Partition place_stem_and_tail(const StrategyInput& in, const ExpertsLayout& layout,
                              const std::string& structure, const BranchParts& branches,
                              int branch_nodes);

// "'first' .. 'last' (12 units, 1.25 ms)": the units of (part of) a branch, for plan.yaml.
std::string branch_label(const UnitGraph& graph, const std::vector<UnitId>& units, double seconds);

// "12.5%".
std::string percent(double fraction);

}  // namespace dpushard::split
