// Re-planning for the surviving nodes: split options rebuilt from what plan.yaml records.

#include "survivor_planner.hpp"

#include <unistd.h>

#include <random>
#include <system_error>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/split/split.hpp"
#include "read_model.hpp"

namespace dpushard::cli {
namespace {

std::filesystem::path find_model(const Plan& plan, const std::filesystem::path& plan_dir,
                                 const std::string& model) {
  auto is_file = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::is_regular_file(p, ec);
  };
  if (!model.empty()) {
    if (!is_file(model)) throw Error("--model " + model + ": no such file");
    return model;
  }
  if (plan.model_file.empty())
    throw Error(
        "--on-node-loss replan: the plan records no source model; give the model it was split "
        "from with --model FILE");
  const std::filesystem::path recorded = plan.model_file;
  for (const auto& candidate : {recorded, plan_dir / recorded, plan_dir / recorded.filename(),
                                plan_dir.parent_path() / recorded.filename()})
    if (is_file(candidate)) return candidate;
  throw Error("--on-node-loss replan: cannot find the plan's source model '" + plan.model_file +
              "' (plan.yaml model.file, also looked in " + plan_dir.string() +
              "); give it with --model FILE");
}

// "kv260" from "timing:kv260"; empty for the roofline.
std::string timing_target(const std::string& cost_model) {
  const std::string prefix = "timing:";
  return cost_model.rfind(prefix, 0) == 0 ? cost_model.substr(prefix.size()) : "";
}

// The file an oracle came from: "NAME (ORIGIN)" as the planner records it.
std::string oracle_origin(const std::string& recorded) {
  const auto open = recorded.rfind(" (");
  if (open == std::string::npos || recorded.back() != ')') return "builtin";
  return recorded.substr(open + 2, recorded.size() - open - 3);
}

}  // namespace

SurvivorPlanner::SurvivorPlanner(const Plan& plan, const std::filesystem::path& plan_dir,
                                 const std::string& model, int inflight)
    : plan_(plan), model_path_(find_model(plan, plan_dir, model)), inflight_(inflight) {
  if (!plan_.model_sha256.empty() && sha256_file(model_path_) != plan_.model_sha256)
    throw Error("--on-node-loss replan: " + model_path_.string() +
                " is not the model the plan was split from (its sha256 differs from plan.yaml's "
                "model.sha256)");
  model_ = read_model(model_path_.string());
  const std::string origin = oracle_origin(plan_.oracle);
  if (origin != Oracle::builtin().origin()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(origin, ec))
      throw Error("--on-node-loss replan: the plan's oracle file '" + origin + "' is not there");
    oracle_ = std::make_unique<Oracle>(Oracle::load(origin));
  }
  std::random_device random;
  scratch_ = std::filesystem::temp_directory_path() /
             ("dpushard-replan-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
}

SurvivorPlanner::~SurvivorPlanner() {
  // Plans still being made finish first: they write into scratch_.
  for (auto& [key, future] : cache_)
    if (future.valid()) future.wait();
  std::error_code ignored;
  std::filesystem::remove_all(scratch_, ignored);
}

std::string SurvivorPlanner::key_of(const std::vector<std::size_t>& nodes) const {
  std::string key = std::to_string(nodes.size());
  for (std::size_t node : nodes)
    key += "," + (node < plan_.node_targets.size() ? plan_.node_targets[node] : std::string());
  return key;
}

std::shared_future<SurvivorPlanner::Outcome> SurvivorPlanner::start(
    const std::vector<std::size_t>& nodes) {
  std::lock_guard lock(mutex_);
  const std::string key = key_of(nodes);
  auto it = cache_.find(key);
  if (it == cache_.end())
    it = cache_
             .emplace(key,
                      std::async(std::launch::async, [this, nodes] { return make(nodes); }).share())
             .first;
  return it->second;
}

void SurvivorPlanner::prepare_ahead() {
  const auto count = static_cast<std::size_t>(plan_.nodes);
  if (count < 2) return;
  for (std::size_t left_out = 0; left_out < count; ++left_out) {
    std::vector<std::size_t> nodes;
    for (std::size_t n = 0; n < count; ++n)
      if (n != left_out) nodes.push_back(n);
    start(nodes);
  }
}

std::optional<cluster::PlanOnNodes> SurvivorPlanner::plan_for(const std::vector<std::size_t>& nodes,
                                                              std::string& why) {
  const Outcome& outcome = start(nodes).get();
  why = outcome.why;
  return outcome.plan;
}

SurvivorPlanner::Outcome SurvivorPlanner::make(const std::vector<std::size_t>& nodes) {
  std::lock_guard planning(planning_);
  SplitOptions options;
  options.nodes = static_cast<int>(nodes.size());
  options.objective = parse_objective(plan_.objective.empty() ? "latency" : plan_.objective);
  options.max_latency_ms = plan_.max_latency_ms;
  options.output_fix = plan_.output_fix;
  options.link_gbps = plan_.link_gbps;
  options.oracle = oracle_.get();
  options.model_file = plan_.model_file;
  options.model_sha256 = plan_.model_sha256;
  options.frames_in_flight =
      plan_.memory.frames_in_flight > 0 ? plan_.memory.frames_in_flight : inflight_;
  // The memory budget as the plan recorded it (none in plans made without one).
  options.memory_budget_bytes = plan_.memory.budget_bytes;
  options.memory_board = plan_.memory.board;
  TimingCostParams params;
  params.link_gbps = plan_.link_gbps;
  std::unique_ptr<CostModel> cost;
  const std::string base = timing_target(plan_.cost_model);
  if (!base.empty()) {
    cost = make_timing_cost_model(resolve_target(base), params);
    options.cost_model = cost.get();
  }
  // Mixed boards: each survivor keeps its own target, cost model and memory.
  std::map<std::string, std::unique_ptr<CostModel>> node_costs;
  if (!plan_.node_targets.empty()) {
    for (std::size_t node : nodes) {
      const std::string& name = plan_.node_targets.at(node);
      const Target target = resolve_target(name);
      if (!node_costs.count(name))
        node_costs[name] = name == base ? nullptr : make_timing_cost_model(target, params);
      options.node_cost_models.push_back(node_costs[name] ? node_costs[name].get() : cost.get());
      options.node_targets.push_back(target.name);
      options.node_memory_budget_bytes.push_back(node < plan_.memory.node_budget_bytes.size()
                                                     ? plan_.memory.node_budget_bytes[node]
                                                     : target.model_memory_bytes);
    }
  }
  const std::string& chooser = chooser_strategy();  // the planner's choice
  const std::string requested =
      plan_.requested_strategy.empty() ? chooser : plan_.requested_strategy;
  std::vector<std::string> strategies{requested};
  if (!strategy_chooses(requested)) strategies.push_back(chooser);  // e.g. experts: more nodes
  Outcome outcome;
  for (const std::string& strategy : strategies) {
    try {
      options.strategy = parse_strategy(strategy);
      SplitResult result = split_model(model_, options);
      std::filesystem::path dir;
      {
        std::lock_guard lock(mutex_);
        dir = scratch_ /
              ("nodes-" + std::to_string(nodes.size()) + "-" + std::to_string(next_folder_++));
      }
      Plan written = write_split(result, dir);
      outcome.plan = cluster::PlanOnNodes{std::move(written), dir};
      outcome.why.clear();
      return outcome;
    } catch (const Error& e) {
      outcome.why = "no plan for " + std::to_string(nodes.size()) + " nodes: " + e.what();
    }
  }
  return outcome;
}

}  // namespace dpushard::cli
