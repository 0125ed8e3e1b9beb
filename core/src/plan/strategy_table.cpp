// The strategy table (dpushard/strategy_table.hpp). A new strategy is one row here plus its
// planner file in core/src/split (docs/extending.md).

#include "dpushard/strategy_table.hpp"

#include <algorithm>

#include "dpushard/error.hpp"

namespace dpushard {

namespace {

std::vector<StrategyInfo> make_table() {
  std::vector<StrategyInfo> t;
  StrategyInfo experts;
  experts.name = "experts";
  experts.summary = "model parallel: the fork-join's expert branches spread over the nodes";
  experts.requestable = true;
  experts.recorded = true;
  experts.inner_min_replicas = 2;
  experts.min_nodes = 2;
  experts.candidate_rank = 2;
  experts.falls_back_to = "pipeline";
  experts.needs_fork_join = true;
  experts.options = {"--min-parallel"};
  experts.color = "tab:blue";
  t.push_back(experts);

  StrategyInfo pipeline;
  pipeline.name = "pipeline";
  pipeline.summary = "stages: consecutive slices of the model, one per node";
  pipeline.requestable = true;
  pipeline.recorded = true;
  pipeline.inner_min_replicas = 2;
  pipeline.min_nodes = 2;
  pipeline.candidate_rank = 1;
  pipeline.options = {"--cuts"};
  pipeline.color = "tab:orange";
  t.push_back(pipeline);

  StrategyInfo replicate;
  replicate.name = "replicate";
  replicate.summary = "data parallel: the whole model on every node, frames shared out";
  replicate.requestable = true;
  replicate.recorded = true;
  replicate.baseline = true;
  replicate.color = "tab:gray";
  t.push_back(replicate);

  StrategyInfo hybrid;
  hybrid.name = "hybrid";
  hybrid.summary = "replicas of an experts, pipeline or pipelined-experts plan";
  hybrid.requestable = true;
  hybrid.recorded = true;
  hybrid.composite = true;
  hybrid.min_nodes = 2;
  hybrid.candidate_rank = 3;
  hybrid.options = {"--replicas"};
  hybrid.color = "tab:green";
  t.push_back(hybrid);

  StrategyInfo automatic;
  automatic.name = "auto";
  automatic.summary = "the planner's choice: the best of the others for --objective";
  automatic.requestable = true;
  automatic.chooses = true;
  automatic.options = {"--objective", "--max-latency-ms", "--cuts"};  // --cuts: the pipeline's
  automatic.color = "tab:red";
  t.push_back(automatic);

  StrategyInfo pipelined;
  pipelined.name = "pipelined-experts";
  pipelined.summary = "a hybrid's inner plan: the expert branches as pipelined stages";
  pipelined.inner_min_replicas = 1;
  pipelined.min_nodes = 2;
  pipelined.needs_fork_join = true;
  t.push_back(pipelined);
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
