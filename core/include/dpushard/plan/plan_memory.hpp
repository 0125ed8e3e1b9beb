#pragma once
// Memory budgets of a plan's node slots: every node's fragments together must fit in the
// budget the plan records (docs/plan.md `memory:`). What one fragment needs is the planner's
// estimate (fragment_memory in memory_budget.hpp), recorded as cost.memory_bytes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/plan/plan_format.hpp"

namespace dpushard {

// "812.3 MiB" / "1.25 GiB": sizes in messages.
std::string memory_text(std::int64_t bytes);

// One fragment's place and need, for memory_misfit.
struct FragmentNeed {
  std::string name;
  std::vector<int> nodes;
  std::int64_t bytes = 0;
};

// The first node whose fragments (summed: a node running several holds them all) need more
// than `budget_bytes`, as one line naming the fragment, its need and the node's budget;
// nullopt when every node fits. `board` names the target in the message.
std::optional<std::string> memory_misfit(const std::vector<FragmentNeed>& fragments,
                                         std::int64_t budget_bytes, const std::string& board);
// Mixed boards: node n's budget is `budgets[n]` (named `boards[n]`); a node past the end of
// `budgets` has `budget_bytes` and `board`. A budget of 0 is no budget.
std::optional<std::string> memory_misfit(const std::vector<FragmentNeed>& fragments,
                                         const std::vector<std::int64_t>& budgets,
                                         const std::vector<std::string>& boards,
                                         std::int64_t budget_bytes, const std::string& board);
// The same for a plan that records a budget (plan.memory, per node when the plan records
// node targets); nullopt without one.
std::optional<std::string> memory_misfit(const Plan& plan);

}  // namespace dpushard
