#include "scaling/options.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpushard/plan/strategy_table.hpp"

#ifndef DPUSHARD_GIT_REVISION
#define DPUSHARD_GIT_REVISION "unknown"
#endif

namespace dpushard::bench {

int benchmark_repetitions_flag(int argc, char** argv) {
  const std::string prefix = "--benchmark_repetitions=";
  int repetitions = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(prefix, 0) == 0)
      repetitions = std::max(1, std::atoi(arg.c_str() + prefix.size()));
  }
  return repetitions;
}

const std::vector<std::string>& strategies_on(const SweepOptions& o, int nodes) {
  const auto it = o.node_strategies.find(nodes);
  return it != o.node_strategies.end() ? it->second : o.strategies;
}

bool swept_on(const SweepOptions& o, int nodes, const std::string& size) {
  const auto it = o.node_sizes.find(nodes);
  return it == o.node_sizes.end() ||
         std::find(it->second.begin(), it->second.end(), size) != it->second.end();
}

namespace {

// "4=hybrid,replicate,auto" -> {4, [hybrid, replicate, auto]}; each value must be in
// `allowed`. Throws std::invalid_argument naming the flag.
void parse_per_node(const std::string& flag, const std::vector<std::string>& items,
                    const std::set<std::string>& allowed, const std::string& allowed_what,
                    std::map<int, std::vector<std::string>>& out) {
  for (const auto& item : items) {
    const auto eq = item.find('=');
    int nodes = 0;
    try {
      std::size_t used = 0;
      nodes = eq == std::string::npos ? 0 : std::stoi(item.substr(0, eq), &used);
      if (used != eq) nodes = 0;
    } catch (const std::exception&) {
      nodes = 0;
    }
    if (nodes < 2)
      throw std::invalid_argument(flag + ": " + "'" + item +
                                  "': expected N=A,B,... with N >= 2 nodes");
    if (out.count(nodes))
      throw std::invalid_argument(flag + ": " + std::to_string(nodes) + " nodes given twice");
    std::vector<std::string> values;
    std::string rest = item.substr(eq + 1);
    while (true) {
      const auto comma = rest.find(',');
      const std::string v = rest.substr(0, comma);
      if (v.empty() || !allowed.count(v))
        throw std::invalid_argument(flag + ": " + "'" + item + "': '" + v + "' is not one of " +
                                    allowed_what);
      values.push_back(v);
      if (comma == std::string::npos) break;
      rest = rest.substr(comma + 1);
    }
    out[nodes] = values;
  }
}

}  // namespace

SweepOptions parse_sweep_options(const std::string& family, int argc, char** argv,
                                 int benchmark_repetitions) {
  SweepOptions o;
  o.family = family;
  o.repetitions = benchmark_repetitions;
  o.git_revision = DPUSHARD_GIT_REVISION;
  CLI::App app{"bench_" + family + "_scaling: " + family +
               " models of increasing size on 1..N nodes of a dpushard cluster, per split "
               "strategy (Google Benchmark; docs/benchmarking.md).\nGoogle Benchmark's flags "
               "also apply: --benchmark_out=FILE --benchmark_out_format=json "
               "--benchmark_repetitions=N --benchmark_filter=REGEX ..."};
  std::string cluster, models, progress;
  app.add_option("--cluster", cluster, "cluster.yaml of the running workers (docs/cluster.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--models", models,
                 "Folder of models and plans; missing ones are made (layout: "
                 "docs/benchmarking.md)")
      ->default_str(o.models_dir.string());
  app.add_option("--sizes", o.sizes, "Model sizes in parameters (K, M, G suffixes)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--nodes", o.node_counts, "Node counts (default: 1 to the cluster's size)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  app.add_option("--strategies", o.strategies, "Split strategies for more than one node")
      ->delimiter(',')
      ->check(CLI::IsMember(requestable_strategies()))
      ->capture_default_str();
  std::vector<std::string> node_strategies, node_sizes;
  app.add_option("--node-strategies", node_strategies,
                 "N=A,B,...: on N nodes sweep these strategies instead of --strategies "
                 "(repeatable; a wide node count for a subset, e.g. 4=hybrid,replicate,auto)")
      ->take_all();
  app.add_option("--node-sizes", node_sizes,
                 "N=S,T,...: on N nodes sweep only these of --sizes (repeatable)")
      ->take_all();
  app.add_option("--objective", o.objective,
                 "What plans this suite makes optimise, as `dpushard split --objective` (auto "
                 "picks its plan by it)")
      ->check(CLI::IsMember({"latency", "throughput"}))
      ->capture_default_str();
  app.add_option("--experts", o.experts, "Expert branches of the zoo models")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--input", o.input, "Input HxWxC of the zoo models")->capture_default_str();
  if (family == "convvit")
    app.add_option("--attention", o.attention,
                   "The ConvViT's token mixer: gated (DPU ops only) or softmax (attention, "
                   "layernorm and GELU on the A53; swept as the family convvit-softmax)")
        ->check(CLI::IsMember({"gated", "softmax"}))
        ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the zoo models' weights")->capture_default_str();
  bool no_weights = false;
  app.add_flag("--no-weights", no_weights,
               "Zoo models without weights (`dpushard zoo --no-weights`): cheap models of any "
               "size for timing-only sim workers (kept apart in --models: <spec>-nw)");
  app.add_option("--frames", o.frames, "Frames per timed iteration")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--min-seconds", o.min_seconds,
                 "Stream enough frames per timed iteration to last this long at the plan's "
                 "predicted fps (small, fast models: 16 frames are a few ms, where one "
                 "scheduling hiccup decides the result); 0: exactly --frames")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--scenarios", o.scenarios,
                 "MLPerf LoadGen scenarios measured per configuration: SingleStream (one frame "
                 "in flight: latency), Offline (frames enough to saturate the plan: throughput), "
                 "Server (Poisson arrivals: the highest rate whose p99 stays under a bound; one "
                 "node, and replicate and auto on the largest node count)")
      ->delimiter(',')
      ->check(CLI::IsMember({"SingleStream", "Offline", "Server"}))
      ->capture_default_str();
  app.add_option("--server-latency-multiple", o.server_latency_multiple,
                 "Server: the p99 bound is this many times one node's SingleStream p50 of the "
                 "same model")
      ->check(CLI::Range(1.0, 1000.0))
      ->capture_default_str();
  app.add_option("--max-latency-ms", o.max_latency_ms,
                 "Server: the p99 bound in ms, in place of --server-latency-multiple (0: the "
                 "multiple)")
      ->check(CLI::Range(0.0, 1e7))
      ->capture_default_str();
  app.add_option("--server-trials", o.server_trials, "Server: rates tried by the bisection")
      ->check(CLI::Range(1, 30))
      ->capture_default_str();
  bool no_server_one_node = false;
  app.add_flag("--no-server-one-node", no_server_one_node,
               "Server: only replicate and auto on the largest node count, not one node (the "
               "one-node search streams at least 64 arrivals per rate at one board's rate: "
               "minutes at 200M)");
  app.add_option("--inflight", o.inflight,
                 "Offline: frames in flight; 0: as many as saturate the plan, the planner's "
                 "offline_inflight()")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--inflight-per-node", o.inflight_per_node,
                 "Offline: frames in flight per node of the configuration, in place of "
                 "--inflight (one board and sixteen each get K per node); 0: --inflight")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--warmup-frames", o.warmup_frames,
                 "Frames of one untimed run before each configuration (0: none)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "Timed iterations per repetition")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--inventory", o.inventory, "Inventory name recorded in the context")
      ->capture_default_str();
  app.add_option("--progress-file", progress, "Also append the progress lines to this file");
  app.add_option("--git-revision", o.git_revision, "Revision recorded in the context")
      ->capture_default_str();
  app.add_option("--cost-target", o.cost_target,
                 "Plans this suite makes are priced with this DPU target's timing model, as "
                 "`dpushard split --target` (kv260 or a target YAML file); default: the "
                 "roofline. Plans found in --models are used as they are");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  try {
    const std::vector<std::string> strategies = requestable_strategies();
    parse_per_node("--node-strategies", node_strategies,
                   std::set<std::string>(strategies.begin(), strategies.end()),
                   requestable_strategies_text(), o.node_strategies);
    const std::set<std::string> sizes(o.sizes.begin(), o.sizes.end());
    parse_per_node("--node-sizes", node_sizes, sizes, "--sizes", o.node_sizes);
  } catch (const std::invalid_argument& e) {
    std::cerr << "bench_" << family << "_scaling: error: " << e.what() << "\n";
    std::exit(2);
  }
  o.cluster_file = cluster;
  o.weights = !no_weights;
  o.server_one_node = !no_server_one_node;
  if (o.attention == "softmax") o.family = "convvit-softmax";
  if (!models.empty()) o.models_dir = models;
  o.progress_file = progress;
  return o;
}

}  // namespace dpushard::bench
