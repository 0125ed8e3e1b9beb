// The strategy table (dpushard/plan/strategy_table.hpp). A new strategy is one row here (a row
// function and its place in make_table) plus its planner file, core/src/split/strategy_<name>.cpp
// (docs/extending.md).

#include "dpushard/plan/strategy_table.hpp"

#include <algorithm>

#include "dpushard/base/error.hpp"

namespace dpushard {

namespace {

// One function per row, in the report's order (make_table).
StrategyInfo experts_row() {
  StrategyInfo s;
  s.name = "experts";
  s.summary = "model parallel: the fork-join's expert branches spread over the nodes";
  s.requestable = true;
  s.recorded = true;
  s.inner_min_replicas = 2;
  s.min_nodes = 2;
  s.candidate_rank = 2;
  s.falls_back_to = "pipeline";
  s.needs_fork_join = true;
  s.options = {"--min-parallel"};
  s.color = "tab:blue";
  return s;
}

StrategyInfo pipeline_row() {
  StrategyInfo s;
  s.name = "pipeline";
  s.summary = "stages: consecutive slices of the model, one per node";
  s.requestable = true;
  s.recorded = true;
  s.inner_min_replicas = 2;
  s.min_nodes = 2;
  s.candidate_rank = 1;
  s.options = {"--cuts"};
  s.color = "tab:orange";
  return s;
}

StrategyInfo replicate_row() {
  StrategyInfo s;
  s.name = "replicate";
  s.summary = "data parallel: the whole model on every node, frames shared out";
  s.requestable = true;
  s.recorded = true;
  s.baseline = true;
  s.color = "tab:gray";
  return s;
}

StrategyInfo hybrid_row() {
  StrategyInfo s;
  s.name = "hybrid";
  s.summary = "replicas of an experts, pipeline or pipelined-experts plan";
  s.requestable = true;
  s.recorded = true;
  s.composite = true;
  s.min_nodes = 2;
  s.candidate_rank = 3;
  s.options = {"--replicas"};
  s.color = "tab:green";
  return s;
}

StrategyInfo automatic_row() {
  StrategyInfo s;
  s.name = "auto";
  s.summary = "the planner's choice: the best of the others for --objective";
  s.requestable = true;
  s.chooses = true;
  s.options = {"--objective", "--max-latency-ms", "--cuts"};  // --cuts: the pipeline's
  s.color = "tab:red";
  return s;
}

StrategyInfo pipelined_experts_row() {
  StrategyInfo s;
  s.name = "pipelined-experts";
  s.summary = "a hybrid's inner plan: the expert branches as pipelined stages";
  s.inner_min_replicas = 1;
  s.min_nodes = 2;
  s.needs_fork_join = true;
  return s;
}

std::vector<StrategyInfo> make_table() {
  std::vector<StrategyInfo> t;
  t.push_back(experts_row());
  t.push_back(pipeline_row());
  t.push_back(replicate_row());
  t.push_back(hybrid_row());
  t.push_back(automatic_row());
  t.push_back(pipelined_experts_row());
  return t;
}

}  // namespace

const std::vector<StrategyInfo>& strategy_table() {
  static const std::vector<StrategyInfo> table = make_table();
  return table;
}

const StrategyInfo* find_strategy(std::string_view name) {
  for (const StrategyInfo& s : strategy_table())
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<std::string> requestable_strategies() {
  std::vector<std::string> names;
  for (const StrategyInfo& s : strategy_table())
    if (s.requestable) names.push_back(s.name);
  return names;
}

std::vector<std::string> candidate_strategies() {
  std::vector<const StrategyInfo*> rows;
  for (const StrategyInfo& s : strategy_table())
    if (s.requestable && !s.chooses) rows.push_back(&s);
  std::stable_sort(rows.begin(), rows.end(), [](const StrategyInfo* a, const StrategyInfo* b) {
    return a->candidate_rank < b->candidate_rank;
  });
  std::vector<std::string> names;
  for (const StrategyInfo* s : rows) names.push_back(s->name);
  return names;
}

std::vector<std::string> plain_strategies() {
  std::vector<std::string> names;
  for (const StrategyInfo& s : strategy_table())
    if (s.requestable && !s.composite && !s.chooses) names.push_back(s.name);
  return names;
}

std::string requestable_strategies_text() {
  std::string text;
  for (const std::string& n : requestable_strategies()) text += (text.empty() ? "" : ", ") + n;
  return text;
}

bool strategy_chooses(std::string_view name) {
  const StrategyInfo* s = find_strategy(name);
  return s != nullptr && s->chooses;
}

bool strategy_is_baseline(std::string_view name) {
  const StrategyInfo* s = find_strategy(name);
  return s != nullptr && s->baseline;
}

bool strategy_is_composite(std::string_view name) {
  const StrategyInfo* s = find_strategy(name);
  return s != nullptr && s->composite;
}

std::string strategy_color(std::string_view name) {
  const StrategyInfo* s = find_strategy(name);
  return s != nullptr ? s->color : std::string();
}

const std::string& baseline_strategy() {
  for (const StrategyInfo& s : strategy_table())
    if (s.baseline) return s.name;
  throw Error("the strategy table has no baseline");
}

const std::string& chooser_strategy() {
  for (const StrategyInfo& s : strategy_table())
    if (s.chooses) return s.name;
  throw Error("the strategy table has no planner's choice");
}

bool strategy_reads(std::string_view name, std::string_view option) {
  const StrategyInfo* s = find_strategy(name);
  return s != nullptr &&
         std::find(s->options.begin(), s->options.end(), option) != s->options.end();
}

std::string parse_strategy(std::string_view text) {
  const StrategyInfo* s = find_strategy(text);
  if (s == nullptr || !s->requestable)
    throw Error("unknown strategy '" + std::string(text) +
                "' (known: " + requestable_strategies_text() + ")");
  return s->name;
}

}  // namespace dpushard
