// split_model: choose the strategy, extract the fragments, assemble the plan.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "candidates.hpp"
#include "dpushard/graph/cost.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/plan_check.hpp"
#include "dpushard/split/memory_budget.hpp"
#include "dpushard/split/split.hpp"
#include "extract.hpp"
#include "memory_fit.hpp"
#include "output_fix.hpp"
#include "strategies.hpp"

namespace dpushard {
namespace {

using split::Partition;

PlanFinding to_finding(const OracleFinding& f) {
  return {f.op, f.rule, std::string(verdict_name(f.verdict)), f.reason};
}

// Requested cuts at free layout ops get an explicit fix there (output fix operator).
std::vector<std::string> layout_cuts(const Graph& model, const std::vector<std::string>& cuts) {
  const auto classes = split::classify_ops(model);
  std::vector<std::string> out;
  for (const auto& name : cuts) {
    if (model.find(name) == nullptr) throw Error("split: --cuts: no op named '" + name + "'");
    const std::size_t i = split::op_index(model, name);
    if (classes.free_layout[i] && std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(name);
  }
  return out;
}

// Each node's board: its cost model and its speed relative to `cost` (the whole model's
// time on `cost` over its time on the node's, one frame at a time).
split::NodeModels node_models(const split::UnitGraph& units, const CostModel& cost,
                              const SplitOptions& options) {
  split::NodeModels models;
  if (!options.node_cost_models.empty() &&
      options.node_cost_models.size() != static_cast<std::size_t>(options.nodes))
    throw Error("split: " + std::to_string(options.node_cost_models.size()) + " node targets for " +
                std::to_string(options.nodes) + " nodes");
  bool mixed = false;
  for (int n = 0; n < options.nodes; ++n) {
    const auto i = static_cast<std::size_t>(n);
    const CostModel* c = i < options.node_cost_models.size() && options.node_cost_models[i]
                             ? options.node_cost_models[i]
                             : &cost;
    mixed = mixed || c != &cost;
    models.cost.push_back(c);
  }
  models.speed.assign(models.cost.size(), 1.0);
  if (!mixed) return models;
  const split::Partition whole = split::whole_model(units, "replicate", {0});
  const auto ex = split::extract(units, whole, options.output_fix, split::Weights::LeftOut);
  auto seconds = [&](const CostModel& c) {
    return c.prices_fragments() ? c.fragment_load(ex.fragments.front().graph).seconds
                                : units.total_seconds() + c.fragment_overhead_seconds();
  };
  const double base = seconds(cost);
  std::map<const CostModel*, double> speed;
  for (std::size_t n = 0; n < models.cost.size(); ++n) {
    const CostModel* c = models.cost[n];
    if (c == &cost) continue;
    if (!speed.count(c)) {
      const double s = seconds(*c);
      speed[c] = s > 0 && base > 0 ? base / s : 1.0;
    }
    models.speed[n] = speed[c];
  }
  return models;
}

// The model and the options as given: one line for the first fault.
void check_model_and_options(const Graph& model, const SplitOptions& options) {
  if (options.nodes < 1)
    throw Error("split: --nodes must be at least 1, got " + std::to_string(options.nodes));
  if (!options.node_targets.empty() &&
      options.node_targets.size() != static_cast<std::size_t>(options.nodes))
    throw Error("split: " + std::to_string(options.node_targets.size()) + " node targets for " +
                std::to_string(options.nodes) + " nodes");
  if (!options.node_memory_budget_bytes.empty() &&
      options.node_memory_budget_bytes.size() != options.node_targets.size())
    throw Error("split: node memory budgets need one node target each");
  if (!(options.max_latency_ms >= 0))
    throw Error("split: --max-latency-ms must be a positive number of milliseconds");
  if (is_compiled(model))
    throw Error("split: '" + model.name() + "' is a compiled xmodel; split the _int.xmodel");
  validate(model);
}

// The strategies that read `option` (their table rows list it), the planner's choice aside:
// "pipeline" for --cuts.
std::string readers_of(std::string_view option) {
  std::string names;
  for (const StrategyInfo& s : strategy_table())
    if (!s.chooses && strategy_reads(s.name, option)) names += (names.empty() ? "" : ", ") + s.name;
  return names;
}

// The strategy asked for, and --cuts and --replicas against it (its table row's options).
void check_strategy_options(const SplitOptions& options) {
  (void)parse_strategy(options.strategy);
  if (!options.cuts.empty() && !strategy_reads(options.strategy, "--cuts"))
    throw Error("split: --cuts applies to the " + readers_of("--cuts") + " strategy only");
  if (options.replicas != 0) {
    if (!strategy_reads(options.strategy, "--replicas"))
      throw Error("split: --replicas applies to the " + readers_of("--replicas") +
                  " strategy only");
    if (options.replicas < 1 || options.nodes / options.replicas < 2)
      throw Error("split: --replicas " + std::to_string(options.replicas) + " on " +
                  std::to_string(options.nodes) +
                  " nodes: a hybrid needs replicas of at least 2 nodes each (1 replica: the "
                  "pipelined experts)");
  }
}

// The output fix operator on layout ops: model outputs (with output_fix) and requested cuts.
// Returns the model itself when nothing is inserted, else `transformed`.
const Graph& with_output_fixes(const Graph& model, const SplitOptions& options, Graph& transformed,
                               std::vector<PlanAdjustment>& adjustments) {
  const Graph* graph = &model;
  std::vector<std::string> to_fix;
  if (options.output_fix) to_fix = split::unfixed_layout_outputs(model);
  std::vector<PlanAdjustment> output_notes;
  if (!to_fix.empty()) {
    transformed = split::insert_output_fixes(model, to_fix, output_notes, "model output");
    graph = &transformed;
  }
  const auto cut_layouts = layout_cuts(*graph, options.cuts);
  if (!cut_layouts.empty()) {
    transformed = split::insert_output_fixes(*graph, cut_layouts, output_notes, "requested cut");
    graph = &transformed;
  }
  adjustments.insert(adjustments.end(), output_notes.begin(), output_notes.end());
  return *graph;
}

// One plan.fragments entry: an extracted fragment, its cost and the oracle's verdict.
PlanFragment plan_fragment(const split::FragmentPart& part, const split::ExtractedFragment& ex,
                           double compute_seconds, const SplitOptions& options,
                           const Oracle& oracle, const CostModel& cost, bool budgeted) {
  PlanFragment pf;
  pf.name = part.name;
  pf.role = part.role;
  pf.file = "fragments/" + part.name + "_int.xmodel";
  pf.nodes = part.nodes;
  pf.branches = part.branches;
  pf.inputs = ex.inputs;
  pf.outputs = ex.outputs;
  const GraphCost gc = graph_cost(ex.graph);
  pf.cost.ops = static_cast<std::int64_t>(ex.graph.size());
  pf.cost.macs = gc.macs;
  pf.cost.params = gc.params;
  pf.cost.weight_bytes = gc.weight_bytes;
  pf.cost.compute_ms = compute_seconds * 1e3;
  if (DpuUse use; cost.fragment_dpu_use(ex.graph, use)) {
    pf.cost.work_macs = use.macs;
    pf.cost.dpu_macs = use.dpu_macs;
    pf.cost.dpu_ms = use.dpu_ms;
    pf.cost.frame_ms = use.frame_ms;
  }
  if (budgeted)
    pf.cost.memory_bytes = fragment_memory(ex.graph, options.frames_in_flight).total_bytes();
  const FragmentVerdict verdict = oracle.judge(ex.graph);
  pf.oracle_verdict = std::string(verdict_name(verdict.verdict));
  pf.dpu_subgraphs = verdict.dpu_subgraphs;
  for (const auto& finding : verdict.findings) pf.oracle_findings.push_back(to_finding(finding));
  return pf;
}

// The roofline at --link-gbps, unless the options bring a cost model (nullptr then).
std::unique_ptr<CostModel> own_cost_model(const SplitOptions& options) {
  if (options.cost_model) return nullptr;
  RooflineParams params;
  params.link_gbps = options.link_gbps;
  return make_roofline_cost_model(params);
}

// The boards the strategies place fragments for: each node's own, or with
// --uniform-placement the cost model's on every node (the single-target baseline).
split::NodeModels placement_boards(const split::NodeModels& models, const CostModel& cost,
                                   const SplitOptions& options) {
  split::NodeModels placement = models;
  if (options.uniform_placement) {
    placement.cost.assign(models.cost.size(), &cost);
    placement.speed.assign(models.cost.size(), 1.0);
  }
  return placement;
}

// --cuts as positions in the pipeline's unit order (each moved to a safe point, noted).
std::vector<std::size_t> requested_cut_positions(const split::UnitGraph& units,
                                                 const SplitOptions& options,
                                                 std::vector<PlanAdjustment>& adjustments) {
  std::vector<std::size_t> positions;
  for (const auto& name : options.cuts)
    positions.push_back(split::pipeline_cut_for(units, name, adjustments));
  if (!positions.empty() && options.nodes < 2) throw Error("split: --cuts needs at least 2 nodes");
  return positions;
}

// The chosen candidate's partition, its adjustments noted.
Partition chosen_partition(split::CandidateSet& set, std::size_t chosen,
                           const SplitOptions& options, std::vector<PlanAdjustment>& adjustments) {
  Partition partition = std::move(*set.partitions[chosen]);
  adjustments.insert(adjustments.end(), partition.adjustments.begin(), partition.adjustments.end());
  // One node: every strategy is the whole model, recorded under the name asked for (the
  // baseline's, for a composite or the planner's choice).
  const std::string& asked = options.strategy;
  if (options.nodes == 1 && !strategy_is_baseline(asked) && !strategy_is_composite(asked) &&
      !strategy_chooses(asked))
    partition.strategy = asked;
  return partition;
}

bool memory_budgeted(const SplitOptions& options) {
  return options.memory_budget_bytes > 0 ||
         std::any_of(options.node_memory_budget_bytes.begin(),
                     options.node_memory_budget_bytes.end(), [](std::int64_t b) { return b > 0; });
}

// Fragments are priced as a whole (a timing model) on some node, not summed over units.
bool priced_by_fragment(const CostModel& cost, const split::NodeModels& models) {
  return cost.prices_fragments() ||
         std::any_of(models.cost.begin(), models.cost.end(),
                     [](const CostModel* c) { return c->prices_fragments(); });
}

// The plan's memory section; a node without a budget of its own gets the common one.
PlanMemory plan_memory(const SplitOptions& options) {
  PlanMemory memory{
      options.memory_budget_bytes, options.memory_board, options.frames_in_flight, {}};
  if (!options.node_memory_budget_bytes.empty()) {
    memory.node_budget_bytes = options.node_memory_budget_bytes;
    for (std::int64_t& b : memory.node_budget_bytes)
      if (b <= 0) b = options.memory_budget_bytes;
  }
  return memory;
}

// What the plan records about the model, the request and how it was priced.
void describe_plan(Plan& plan, const Graph& model, const Graph& graph, const SplitOptions& options,
                   const CostModel& cost, const Oracle& oracle, const Partition& partition,
                   const PlanCandidate& chosen) {
  plan.model_file = options.model_file;
  plan.model_name = model.name();
  plan.model_sha256 = options.model_sha256;
  plan.model_inputs = split::model_inputs(graph);
  plan.model_outputs = split::model_outputs(graph);
  plan.strategy = partition.strategy;
  if (strategy_is_composite(partition.strategy)) {
    plan.inner_strategy = chosen.inner_strategy;
    plan.replicas = chosen.replicas;
  }
  plan.requested_strategy = options.strategy;
  plan.objective = std::string(objective_name(options.objective));
  plan.max_latency_ms = options.max_latency_ms > 0 ? options.max_latency_ms : 0;
  plan.nodes = options.nodes;
  plan.node_targets = options.node_targets;
  plan.output_fix = options.output_fix;
  plan.cost_parameters = cost.parameters();
  const auto link = plan.cost_parameters.find("link_gbps");
  plan.link_gbps = link != plan.cost_parameters.end() ? link->second : options.link_gbps;
  plan.cost_model = cost.name();
  plan.oracle = oracle.name() + " (" + oracle.origin() + ")";
  plan.structure = partition.structure;
  plan.frame_share = partition.frame_share;
}

}  // namespace

SplitResult split_model(const Graph& model, const SplitOptions& options) {
  check_model_and_options(model, options);
  const Oracle& oracle = options.oracle ? *options.oracle : Oracle::builtin();
  const std::unique_ptr<CostModel> own_cost = own_cost_model(options);
  const CostModel& cost = options.cost_model ? *options.cost_model : *own_cost;
  check_strategy_options(options);

  std::vector<PlanAdjustment> adjustments;
  Graph transformed;
  const Graph* graph = &with_output_fixes(model, options, transformed, adjustments);

  const split::UnitGraph units(*graph, oracle, cost);
  const split::NodeModels models = node_models(units, cost, options);
  const split::StrategyInput input{units,
                                   cost,
                                   options.nodes,
                                   options.objective,
                                   options.output_fix,
                                   options.min_parallel_fraction,
                                   placement_boards(models, cost, options),
                                   requested_cut_positions(units, options, adjustments),
                                   options.replicas};

  // Candidates, and the one the plan is made of.
  const bool budgeted = memory_budgeted(options);
  const bool priced = priced_by_fragment(cost, models);
  const split::CandidatePricing pricing{cost, models, options, priced, budgeted};
  split::CandidateSet set = split::gather_candidates(input, pricing);
  const std::size_t chosen = split::choose_candidate(set, options, adjustments);
  Partition partition = chosen_partition(set, chosen, options, adjustments);

  auto extraction = split::extract(units, partition, options.output_fix);
  split::FragmentPrices prices;
  if (priced) prices = split::price_fragments(extraction, partition, cost, &models);
  const auto est = split::estimate(units, partition, cost, options.output_fix,
                                   priced ? &prices : nullptr, &models);
  adjustments.insert(adjustments.end(), extraction.adjustments.begin(),
                     extraction.adjustments.end());

  SplitResult result;
  Plan& plan = result.plan;
  describe_plan(plan, model, *graph, options, cost, oracle, partition, set.candidates[chosen]);
  if (budgeted) plan.memory = plan_memory(options);
  plan.predicted = est.predicted;
  plan.candidates = split::listed_candidates(set, chosen, adjustments);
  plan.edges = extraction.edges;
  plan.adjustments = adjustments;
  for (std::size_t f = 0; f < partition.fragments.size(); ++f) {
    auto& ex = extraction.fragments[f];
    plan.fragments.push_back(plan_fragment(partition.fragments[f], ex, est.fragment_seconds[f],
                                           options, oracle, cost, budgeted));
    result.fragments.push_back(std::move(ex.graph));
  }
  check_plan(plan);
  return result;
}

}  // namespace dpushard
