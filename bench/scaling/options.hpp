#pragma once
// The scaling suites' own command line (Google Benchmark's --benchmark_* flags are
// handled by the library): the cluster, where models and plans live, and the sweep.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "dpushard/plan/strategy_table.hpp"

namespace dpushard::bench {

struct SweepOptions {
  // "cnn", "convvit" (gated attention) or "convvit-softmax" (--attention softmax: the
  // ConvViT whose attention runs on the A53): which zoo family the suite sweeps
  std::string family;
  std::string attention = "gated";     // the ConvViT's token mixer (zoo convvit --attention)
  std::filesystem::path cluster_file;  // cluster.yaml (docs/cluster.md)
  std::filesystem::path models_dir = "dpushard-models";
  std::vector<std::string> sizes = {"5M", "10M", "20M", "50M", "100M", "200M"};
  std::vector<int> node_counts;  // empty: 1 to the cluster's size
  // experts, pipeline, replicate, hybrid, auto (the planner's choice for `objective`)
  std::vector<std::string> strategies = plain_strategies();
  // Per node count, in place of `strategies` / `sizes` on that many nodes (--node-strategies
  // 4=hybrid,replicate,auto --node-sizes 4=10M,20M): a wide count swept for a subset only.
  std::map<int, std::vector<std::string>> node_strategies;
  std::map<int, std::vector<std::string>> node_sizes;
  std::string objective = "latency";  // plans made here: `dpushard split --objective`
  int experts = 3;
  std::string input = "224x224x3";
  std::uint64_t seed = 1;
  bool weights = true;  // false: models without weights (zoo --no-weights), timing-only workers
  std::int64_t frames = 16;  // per timed iteration, at least
  double min_seconds = 0.5;  // ... and enough frames for this long at the predicted fps
  // MLPerf LoadGen's scenarios, each measured per configuration: SingleStream (one frame in
  // flight; latency) and Offline (frames enough to saturate the plan; throughput).
  // Server: Poisson arrivals; the highest rate whose p99 stays under a bound, for one node
  // and for replicate and auto (the planner's choice) on the largest node count.
  std::vector<std::string> scenarios = {"SingleStream", "Offline", "Server"};
  double server_latency_multiple = 3;  // Server's p99 bound: this x one node's SingleStream p50
  double max_latency_ms = 0;           // > 0: Server's p99 bound in ms instead
  int server_trials = 6;               // rates tried by the bisection
  bool server_one_node = true;         // Server also for one node (--no-server-one-node: not)
  int inflight = 0;                // Offline: frames in flight; 0: the planner's offline_inflight()
  int inflight_per_node = 0;       // Offline: > 0: at least K x nodes in flight
  std::int64_t warmup_frames = 2;  // one untimed run per configuration before timing (0: none)
  int iterations = 1;              // timed iterations per repetition
  int repetitions = 1;             // --benchmark_repetitions, read for the progress estimate
  std::string inventory = "none";
  std::filesystem::path progress_file;  // also append the progress lines here
  std::string git_revision;             // default: the revision the suite was built from
  std::string
      cost_target;  // plans made here: priced by this target's timing model (empty: roofline)
};

// The strategies and sizes swept on `nodes` nodes: --node-strategies / --node-sizes for that
// count, else --strategies / --sizes (one node: only the sizes matter).
const std::vector<std::string>& strategies_on(const SweepOptions& o, int nodes);
bool swept_on(const SweepOptions& o, int nodes, const std::string& size);

// Parses argv after benchmark::Initialize removed its own flags. `--help` prints both sets
// of flags and exits 0; a bad value prints one line naming the flag and exits 2.
SweepOptions parse_sweep_options(const std::string& family, int argc, char** argv,
                                 int benchmark_repetitions);

// --benchmark_repetitions=N as given on the command line (1 when absent); read before
// benchmark::Initialize consumes it.
int benchmark_repetitions_flag(int argc, char** argv);

}  // namespace dpushard::bench
