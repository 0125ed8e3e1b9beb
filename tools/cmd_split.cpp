// dpushard split FILE.xmodel --nodes N [--strategy experts|pipeline|replicate|hybrid|auto]
//   [--replicas R]
//   [--objective latency|throughput] [--max-latency-ms L] [--no-output-fix] [--link-gbps G] [--cuts
//   OP,...]
//   [--oracle FILE] [--min-parallel F] [--target kv260|FILE] [--inflight K]
//   [--node-targets T,T,... | --cluster cluster.yaml] [--uniform-placement] -o PLAN_DIR [--json]
// Cuts an `_int` model into fragments for N nodes and writes PLAN_DIR/plan.yaml and
// PLAN_DIR/fragments/<name>_int.xmodel (docs/splitting.md, docs/plan.md).

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/split/memory_budget.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "read_model.hpp"
#include "usage_error.hpp"

namespace dpushard::cli {
namespace {

struct SplitCliOptions {
  std::string file;
  int nodes = 1;
  std::string strategy = "auto";
  std::string objective = "latency";
  double max_latency_ms = 0;  // 0: no bound
  bool no_output_fix = false;
  double link_gbps = 1.0;
  std::vector<std::string> cuts;
  int replicas = 0;  // hybrid: 0 = every factorisation
  std::string oracle;
  double min_parallel = 0.05;
  std::string target;                     // empty: the roofline cost model
  std::vector<std::string> node_targets;  // mixed boards: one target per node
  std::string cluster;                    // cluster.yaml whose nodes may carry `target:`
  bool uniform_placement = false;
  int inflight = kDefaultFramesInFlight;
  std::string output;
  bool json = false;
  bool list_strategies = false;
  std::size_t nodes_given = 0;
};

// `split --list-strategies [--json]`: the strategy table (dpushard/plan/strategy_table.hpp), which
// the Ansible common role's check and the harness tests read.
nlohmann::json strategies_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const StrategyInfo& s : strategy_table())
    list.push_back({{"name", s.name},
                    {"summary", s.summary},
                    {"requestable", s.requestable},
                    {"recorded", s.recorded},
                    {"chooses", s.chooses},
                    {"baseline", s.baseline},
                    {"composite", s.composite},
                    {"inner_min_replicas", s.inner_min_replicas},
                    {"min_nodes", s.min_nodes},
                    {"needs_fork_join", s.needs_fork_join},
                    {"options", s.options},
                    {"color", s.color}});
  return {{"strategies", list}};
}

int list_strategies(bool json) {
  if (json) {
    print_json(strategies_json());
    return 0;
  }
  for (const StrategyInfo& s : strategy_table())
    std::cout << s.name << (s.requestable ? "" : " (inner plan of a hybrid only)") << ": "
              << s.summary << "\n";
  return 0;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::int64_t bytes_out(const PlanFragment& f) {
  std::int64_t n = 0;
  for (const auto& t : f.outputs) n += t.wire_bytes();
  return n;
}

nlohmann::json to_json(const Plan& plan, const std::string& dir) {
  nlohmann::json j = {{"plan", dir},
                      {"model", plan.model_file},
                      {"model_sha256", plan.model_sha256},
                      {"strategy", plan.strategy},
                      {"requested_strategy", plan.requested_strategy},
                      {"inner_strategy", plan.inner_strategy},
                      {"replicas", plan.replicas},
                      {"objective", plan.objective},
                      {"max_latency_ms", plan.max_latency_ms},
                      {"nodes", plan.nodes},
                      {"node_targets", plan.node_targets},
                      {"output_fix", plan.output_fix},
                      {"cost_model", plan.cost_model},
                      {"link_gbps", plan.link_gbps},
                      {"structure", plan.structure},
                      {"memory",
                       {{"budget_bytes", plan.memory.budget_bytes},
                        {"board", plan.memory.board},
                        {"frames_in_flight", plan.memory.frames_in_flight}}},
                      {"predicted",
                       {{"latency_ms", plan.predicted.latency_ms},
                        {"throughput_fps", plan.predicted.throughput_fps},
                        {"wire_bytes_per_frame", plan.predicted.wire_bytes_per_frame},
                        {"io_bytes_per_frame", plan.predicted.io_bytes_per_frame}}},
                      {"fragments", nlohmann::json::array()},
                      {"candidates", nlohmann::json::array()},
                      {"adjustments", nlohmann::json::array()}};
  for (const auto& f : plan.fragments)
    j["fragments"].push_back({{"name", f.name},
                              {"role", f.role},
                              {"file", f.file},
                              {"sha256", f.sha256},
                              {"nodes", f.nodes},
                              {"macs", f.cost.macs},
                              {"params", f.cost.params},
                              {"compute_ms", f.cost.compute_ms},
                              {"memory_bytes", f.cost.memory_bytes},
                              {"output_bytes", bytes_out(f)},
                              {"oracle", f.oracle_verdict},
                              {"dpu_subgraphs", f.dpu_subgraphs}});
  for (const auto& c : plan.candidates) {
    nlohmann::json cj = {{"strategy", c.strategy}, {"label", c.label()}};
    if (!c.inner_strategy.empty()) {
      cj["inner_strategy"] = c.inner_strategy;
      cj["replicas"] = c.replicas;
    }
    if (c.note.empty()) {
      cj["latency_ms"] = c.predicted.latency_ms;
      cj["throughput_fps"] = c.predicted.throughput_fps;
      cj["wire_bytes_per_frame"] = c.predicted.wire_bytes_per_frame;
    } else {
      cj["not_possible"] = c.note;
    }
    j["candidates"].push_back(cj);
  }
  for (const auto& a : plan.adjustments)
    j["adjustments"].push_back(
        {{"kind", a.kind}, {"at", a.at}, {"to", a.to}, {"reason", a.reason}});
  return j;
}

void print_human(const Plan& plan, const std::string& dir) {
  std::ostringstream out;
  out << "split: " << plan.model_file << " -> " << dir << ": "
      << plan_label(plan.strategy, plan.replicas, plan.inner_strategy);
  if (plan.strategy != plan.requested_strategy) out << " (asked " << plan.requested_strategy << ")";
  out << " on " << plan.nodes << " node" << (plan.nodes == 1 ? "" : "s") << ", objective "
      << plan.objective
      << (plan.max_latency_ms > 0 ? ", latency <= " + fixed(plan.max_latency_ms, 3) + " ms" : "")
      << (plan.output_fix ? "" : ", NO output fix (ablation)") << "\n";
  if (!plan.node_targets.empty()) {
    out << "  node targets:";
    for (std::size_t n = 0; n < plan.node_targets.size(); ++n)
      out << (n == 0 ? " " : ", ") << n << "=" << plan.node_targets[n];
    out << "\n";
  }
  out << "  cost model " << plan.cost_model << ", link " << fixed(plan.link_gbps, 3) << " Gb/s\n";
  out << "  " << plan.structure << "\n";
  if (plan.memory.budget_bytes > 0)
    out << "  memory: " << memory_text(plan.memory.budget_bytes) << " for models per "
        << plan.memory.board << " node, " << plan.memory.frames_in_flight << " frames in flight\n";
  out << "  predicted: latency " << fixed(plan.predicted.latency_ms, 3) << " ms, throughput "
      << fixed(plan.predicted.throughput_fps, 1) << " fps, " << plan.predicted.wire_bytes_per_frame
      << " bytes/frame between nodes\n";
  for (const auto& f : plan.fragments) {
    out << "  " << f.name << " on node";
    for (int n : f.nodes) out << " " << n;
    out << ": " << human_count(f.cost.macs) << " MACs, " << human_count(f.cost.params)
        << " params, " << fixed(f.cost.compute_ms, 3) << " ms, "
        << (f.cost.memory_bytes > 0 ? "needs " + memory_text(f.cost.memory_bytes) + ", " : "")
        << "sends " << bytes_out(f) << " bytes, oracle " << f.oracle_verdict << "\n";
  }
  for (const auto& c : plan.candidates) {
    out << "  candidate " << c.label() << ": ";
    if (c.note.empty()) {
      out << fixed(c.predicted.latency_ms, 3) << " ms, " << fixed(c.predicted.throughput_fps, 1)
          << " fps, " << c.predicted.wire_bytes_per_frame << " bytes/frame\n";
    } else {
      out << "not possible: " << c.note << "\n";
    }
  }
  for (const auto& a : plan.adjustments) out << "  " << a.kind << ": " << a.reason << "\n";
  std::cerr << out.str();
}

int run_split(const SplitCliOptions& o) {
  if (o.list_strategies) return list_strategies(o.json);
  // Required unless listing the strategies (CLI11's `required` would refuse the listing).
  if (o.file.empty() || o.nodes_given == 0 || o.output.empty())
    throw UsageError("split: FILE, --nodes and -o/--output are required");
  const Graph model = read_model(o.file);
  std::unique_ptr<Oracle> oracle;
  if (!o.oracle.empty()) oracle = std::make_unique<Oracle>(Oracle::load(o.oracle));
  SplitOptions options;
  options.nodes = o.nodes;
  options.strategy = parse_strategy(o.strategy);
  options.objective = parse_objective(o.objective);
  options.max_latency_ms = o.max_latency_ms;
  options.output_fix = !o.no_output_fix;
  options.link_gbps = o.link_gbps;
  options.cuts = o.cuts;
  options.replicas = o.replicas;
  options.min_parallel_fraction = o.min_parallel;
  options.oracle = oracle.get();
  std::unique_ptr<CostModel> cost;
  // The nodes' targets: --node-targets, or the cluster's `target:` fields (a node without
  // one is --target's board); both given must agree.
  std::vector<std::string> node_targets = o.node_targets;
  if (!node_targets.empty() && node_targets.size() != static_cast<std::size_t>(o.nodes))
    throw Error("split: --node-targets lists " + std::to_string(node_targets.size()) +
                " targets for --nodes " + std::to_string(o.nodes));
  if (!o.cluster.empty()) {
    const cluster::ClusterConfig config = cluster::read_cluster_config(o.cluster);
    if (config.nodes.size() < static_cast<std::size_t>(o.nodes))
      throw Error("split: " + o.cluster + " lists " + std::to_string(config.nodes.size()) +
                  " nodes, fewer than --nodes " + std::to_string(o.nodes));
    std::vector<std::string> from_cluster;
    bool any = false;
    for (int n = 0; n < o.nodes; ++n) {
      const auto& node = config.nodes[static_cast<std::size_t>(n)];
      any = any || !node.target.empty();
      from_cluster.push_back(!node.target.empty() ? node.target
                                                  : (o.target.empty() ? "kv260" : o.target));
    }
    if (!node_targets.empty() && any && node_targets != from_cluster)
      throw Error("split: --node-targets and the targets of " + o.cluster + " differ");
    if (node_targets.empty() && any) node_targets = from_cluster;
  }
  if (o.uniform_placement && node_targets.empty())
    throw Error("split: --uniform-placement needs --node-targets or a --cluster with targets");
  // The memory budget is the target's; the roofline's defaults are the KV260's, so is its budget.
  // With node targets and no --target, the first node's target is the planner's reference board.
  const std::string base_name =
      !o.target.empty() ? o.target : (!node_targets.empty() ? node_targets.front() : "kv260");
  const Target target = resolve_target(base_name);
  if (!o.target.empty() || !node_targets.empty()) {
    TimingCostParams params;
    params.link_gbps = o.link_gbps;
    cost = make_timing_cost_model(target, params);
    options.cost_model = cost.get();
  }
  options.memory_budget_bytes = target.model_memory_bytes;
  options.memory_board = target.name;
  // One timing model per distinct node target (a name or a file, as --target takes them).
  std::map<std::string, std::unique_ptr<CostModel>> node_costs;
  for (const std::string& name : node_targets) {
    const Target t = resolve_target(name);
    if (!node_costs.count(name)) {
      TimingCostParams params;
      params.link_gbps = o.link_gbps;
      // The reference board's own model when it is the same target: plans for one kind of
      // board stay exactly as --target makes them.
      node_costs[name] = name == base_name ? nullptr : make_timing_cost_model(t, params);
    }
    options.node_cost_models.push_back(node_costs[name] ? node_costs[name].get() : cost.get());
    options.node_targets.push_back(t.name);
    options.node_memory_budget_bytes.push_back(t.model_memory_bytes);
  }
  options.uniform_placement = o.uniform_placement;
  options.frames_in_flight = o.inflight;
  options.model_file = o.file;
  options.model_sha256 = sha256_file(o.file);
  SplitResult result = split_model(model, options);
  const Plan plan = write_split(result, o.output);
  if (o.json) {
    print_json(to_json(plan, o.output));
  } else {
    print_human(plan, o.output);
  }
  return 0;
}

}  // namespace

Command add_split_command(CLI::App& app) {
  auto options = std::make_shared<SplitCliOptions>();
  SplitCliOptions& o = *options;
  CLI::App* sub = app.add_subcommand("split", "Cut an _int model into fragments for N nodes");
  sub->add_option("file", o.file, "The _int xmodel to split (required)");
  CLI::Option* nodes =
      sub->add_option("--nodes", o.nodes, "Node slots (required)")->check(CLI::Range(1, 1024));
  sub->add_option("--strategy", o.strategy, requestable_strategies_text())
      ->capture_default_str()
      ->check(CLI::IsMember(requestable_strategies()));
  sub->add_option("--replicas", o.replicas,
                  "hybrid: replicas of an experts, pipeline or pipelined-experts plan on "
                  "--nodes / R nodes each; 1: the pipelined experts alone (default: the best)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--objective", o.objective, "What auto optimises: latency or throughput")
      ->capture_default_str()
      ->check(CLI::IsMember({"latency", "throughput"}));
  sub->add_option("--max-latency-ms", o.max_latency_ms,
                  "Only plans whose predicted per-frame latency (the cost model's, not a "
                  "measured p99) is at most this; auto picks the best of them for --objective")
      ->check(CLI::Validator(
          [](const std::string& text) {
            double v = 0;
            return CLI::detail::lexical_cast(text, v) && v > 0
                       ? std::string()
                       : "'" + text + "' is not a positive number of milliseconds";
          },
          "MS"));
  sub->add_flag("--no-output-fix", o.no_output_fix,
                "Naive split for the ablation: fragments end before their output fix");
  sub->add_option("--link-gbps", o.link_gbps, "Link speed between nodes, Gb/s")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--cuts", o.cuts, "pipeline: ops to cut after (moved to safe points)")
      ->delimiter(',');
  sub->add_option("--oracle", o.oracle, "Compiler oracle YAML (default: the built-in KV260 one)")
      ->check(CLI::ExistingFile);
  sub->add_option("--min-parallel", o.min_parallel,
                  "experts: smallest share of the model's time a fork-join must overlap")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--target", o.target,
                  "Price the plan with this DPU target's timing model (as `predict`): a built-in "
                  "target (kv260) or a target YAML file. Default: the roofline cost model");
  sub->add_option("--node-targets", o.node_targets,
                  "Mixed boards: each node's target, in node order (built-in names or target "
                  "YAML files, as many as --nodes): fragments are priced on the node that runs "
                  "them, each node's memory is its own")
      ->delimiter(',');
  sub->add_option("--cluster", o.cluster,
                  "Take the nodes' targets from this cluster.yaml (its first --nodes nodes' "
                  "`target:`; a node without one is --target's board)")
      ->check(CLI::ExistingFile);
  sub->add_flag("--uniform-placement", o.uniform_placement,
                "With node targets: place fragments as a plan for --target alone would (every "
                "node its board), priced on each node's own (the single-target baseline)");
  sub->add_option("--inflight", o.inflight,
                  "Frames each node keeps in flight (`run --inflight`): their feature maps count "
                  "against the target's memory for models")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("-o,--output", o.output, "The plan folder to write (required)");
  sub->add_flag("--json", o.json,
                "Print the plan summary (or, with --list-strategies, the table) as one JSON "
                "object on stdout");
  sub->add_flag("--list-strategies", o.list_strategies,
                "Print the strategy table (name, what it needs, the options it reads) and exit");
  return {sub, [options, nodes] {
            options->nodes_given = nodes->count();
            return run_split(*options);
          }};
}

}  // namespace dpushard::cli
