#pragma once
// The split strategies, in the one table the plan module owns (docs/extending.md, "A
// strategy"). Everything that names strategies reads it: `split --strategy` and the bench's
// --strategies choices, plan_check (what a plan.yaml may record), the report (its order,
// baseline, labels and plot colours), and, through `dpushard split --list-strategies
// --json`, the Ansible common role's check and the harness tests.

#include <string>
#include <string_view>
#include <vector>

namespace dpushard {

struct StrategyInfo {
  std::string name;     // what --strategy, plan.yaml and the report call it
  std::string summary;  // one line, for --list-strategies
  // A user may ask for it (--strategy, SplitOptions::strategy); false: a hybrid's inner plan
  // only. Each one but the planner's choice has a planner in core/src/split/strategy_*.cpp.
  bool requestable = false;
  bool recorded = false;   // a plan.yaml's `strategy` may be it (auto picks one of the others)
  bool chooses = false;    // the planner picks the best of the others (auto)
  bool baseline = false;   // data parallel: the baseline the report sets the others against,
                           // and the only plan with a frame_share (replicate)
  bool composite = false;  // replicas of an inner plan: plan.yaml's `hybrid` block (hybrid)
  // As a hybrid's inner plan: the fewest replicas it needs (0: never an inner plan).
  int inner_min_replicas = 0;
  int min_nodes = 1;  // fewer nodes: the planner says why not
  // Where its candidates come among the planner's (plan.yaml's list, and auto's ties go to
  // the earlier): the lowest rank first, equal ranks in table order.
  int candidate_rank = 0;
  // Asked for but not possible: this strategy's plan instead, if possible (else the
  // baseline's); empty: the baseline's.
  std::string falls_back_to;
  bool needs_fork_join = false;      // the model needs a fork-join of expert branches
  std::vector<std::string> options;  // the `split` options it reads besides --nodes
  std::string color;                 // its colour in the report's figures (matplotlib)
};

// Every strategy, in the report's order.
const std::vector<StrategyInfo>& strategy_table();
// The entry named `name`; null when there is none.
const StrategyInfo* find_strategy(std::string_view name);
// The names of the strategies a user may ask for, in order.
std::vector<std::string> requestable_strategies();
// The requestable strategies that make candidates of their own (all but the planner's
// choice), in candidate_rank order: the planners split_model asks.
std::vector<std::string> candidate_strategies();
// The requestable strategies that make one plan of their own (neither composite nor the
// planner's choice): experts, pipeline, replicate; the bench sweeps them by default.
std::vector<std::string> plain_strategies();
// "experts, pipeline, replicate, hybrid, auto": the requestable names, for messages.
std::string requestable_strategies_text();

// The table's answers for a name (false for a name it does not hold).
bool strategy_chooses(std::string_view name);       // the planner's choice (auto)
bool strategy_is_baseline(std::string_view name);   // data parallel (replicate)
bool strategy_is_composite(std::string_view name);  // replicas of an inner plan (hybrid)
// Its colour in the report's figures; empty for a name the table does not hold.
std::string strategy_color(std::string_view name);
// Whether `name`'s row lists the `split` option `option` (e.g. "--cuts").
bool strategy_reads(std::string_view name, std::string_view option);
// The data-parallel baseline's name (replicate): what one node runs, whatever was asked.
const std::string& baseline_strategy();
// The planner's choice's name (auto): SplitOptions' default.
const std::string& chooser_strategy();

// `text` if it names a requestable strategy; else throws dpushard::Error listing the names.
std::string parse_strategy(std::string_view text);

}  // namespace dpushard
