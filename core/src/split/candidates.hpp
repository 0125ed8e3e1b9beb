#pragma once
// The plans a split weighs against each other: every strategy's partition (or why there is
// none), its prediction and whether it fits its nodes' memory; and the choice among them
// (the requested strategy, or the objective's best under the latency bound, with the
// fallbacks and the adjustments that say why).

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/split/split.hpp"
#include "partition.hpp"
#include "strategies.hpp"

namespace dpushard::split {

struct CandidateSet {
  std::vector<PlanCandidate> candidates;
  std::vector<std::optional<Partition>> partitions;  // nullopt: not possible or does not fit
  std::vector<std::string> misfits;  // per candidate: why it does not fit its nodes' memory

  std::optional<std::size_t> index_of(const std::string& strategy) const;
  std::string misfit_of(const std::string& strategy) const;
};

// What pricing a candidate needs besides the strategy's input.
struct CandidatePricing {
  const CostModel& cost;
  const NodeModels& models;
  const SplitOptions& options;
  bool priced = false;    // fragments are priced as a whole (the timing model)
  bool budgeted = false;  // nodes have memory budgets
};

// Every strategy's candidates for `input`, from the planners of the strategy table's
// candidate_strategies() in order (one node: the whole model only).
CandidateSet gather_candidates(const StrategyInput& input, const CandidatePricing& pricing);

// The candidates plan.yaml and `split` list: all of them while there are at most a dozen
// hybrids; past that (hundreds of nodes), the other strategies, the chosen plan and the
// hybrids no other hybrid beats on latency, throughput and bytes between nodes, with one
// adjustment ("candidates") saying how many were priced and left out.
std::vector<PlanCandidate> listed_candidates(const CandidateSet& set, std::size_t chosen,
                                             std::vector<PlanAdjustment>& adjustments);

// The candidate the split makes into its plan; appends the adjustments that explain the
// choice (fallbacks, plans left out for the latency bound or for memory). Throws one line
// when nothing is possible.
std::size_t choose_candidate(const CandidateSet& set, const SplitOptions& options,
                             std::vector<PlanAdjustment>& adjustments);

// Milliseconds for messages: three decimals, as `split` prints them.
std::string format_ms(double ms);

}  // namespace dpushard::split
