#pragma once
// Reading a run folder: the Google Benchmark JSON files of the scaling suites
// (--benchmark_out) and env.json written by the collect role. One Measurement per
// configuration (family, size, node count, strategy); repetitions are averaged.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dpushard::report {

// The two-sided 95 % quantile of Student's t with `df` degrees of freedom.
double student_t95(int df);

// One configuration of a scaling suite, averaged over its repetitions.
struct Measurement {
  std::string file;    // the JSON file it came from (name only)
  std::string name;    // the benchmark's run_name
  std::string family;  // "cnn", "convvit"
  std::string size;    // the size as swept: "10M"
  double params = 0;   // the model's actual parameter count
  double gmacs = 0;    // multiply-accumulates per frame, in billions
  int nodes = 1;
  // "single" for the 1-node baseline, else experts|pipeline|replicate|hybrid|auto
  std::string strategy;
  // MLPerf LoadGen's scenario (the name's "scenario:" part): "SingleStream" (one frame in
  // flight: latency), "Offline" (saturated: throughput); empty in runs from before them,
  // whose latency was measured under the same load as their throughput.
  std::string scenario;
  double inflight = 0;  // frames in flight (Offline: the planner's saturating count)
  // Server: fps is the highest Poisson arrival rate whose p99 stayed under this bound (ms);
  // offline_fps the configuration's Offline rate the search started from.
  double latency_bound_ms = 0;
  double offline_fps = 0;
  double predicted_latency_ms = 0;
  // What the plan is, from the suite's label ("hybrid 2x experts"; for auto, the plan it
  // chose); empty when the suite gave none.
  std::string plan_label;
  bool planner_choice = false;  // `auto` picks this plan for its size and node count
  double fps = 0;
  // The whole run's rate: every timed frame over the timed span, the fill included (0: not
  // recorded). Never above what the plan can do, so evidence beside a steady rate above a bound.
  double span_fps = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double bytes_per_frame = 0;       // measured: all tensor traffic per frame (inputs in, tensors
                                    // between nodes, outputs back; message headers included)
  double node_bytes_per_frame = 0;  // the plan's int8 bytes between nodes per frame
  double busiest_node_share = 0;    // the busiest node's share of predicted compute (0: unknown)
  double predicted_fps = 0;         // the planner's prediction; 0 when the suite gave none
  int repetitions = 0;              // measurements averaged
  // The spread of fps over the repetitions: sample standard deviation and the 95 %
  // confidence interval of the mean (Student's t); lo == hi == fps with one repetition.
  double fps_stddev = 0;
  double fps_lo = 0;
  double fps_hi = 0;
  // The run's own spread (0: not recorded): its steady window's two halves' rates apart and
  // its frames' two halves' median latencies apart, each |a - b| / (a + b) (the suite's
  // fps_spread and p50_spread counters, cluster::RunResult).
  double fps_spread = 0;
  double p50_spread = 0;
  // Where the time goes, per frame (0 when the suite did not record it): the busiest
  // node's backend time measured and the plan's prediction of it, the largest worker and
  // the orchestrator CPU time on this machine, and the busiest node's bytes sent.
  double node_ms = 0;
  double predicted_node_ms = 0;
  double worker_cpu_ms = 0;
  double orchestrator_cpu_ms = 0;
  double node_tx_bytes = 0;
  double link_paced = -1;  // share of runs with the link paced; -1: not recorded
  // The most frames per second the plan can run (0: not known), each a hard upper bound:
  // its slowest fragment's modeled time on each of its nodes (sim only), the busiest node's
  // port and the head node's port at the link's goodput (paced links only).
  double bound_node_fps = 0;
  double bound_link_fps = 0;
  double bound_port_fps = 0;
  // DPU utilization from the plan (the timing model's; 0 and empty when not recorded): the
  // whole model's share of MACs and of one frame's time on the DPU, the modeled DPU ms of a
  // frame over all nodes and on the busiest node, and each fragment's two shares.
  double dpu_mac_share = 0;
  double dpu_time_share = 0;
  double dpu_ms = 0;
  double busiest_dpu_ms = 0;
  struct FragmentDpu {
    std::string name;
    double mac_share = 0;
    double time_share = 0;
  };
  std::vector<FragmentDpu> fragment_dpu;
  double plan_max_latency_ms = 0;  // the planner's --max-latency-ms (0: none given)
  bool failed = false;             // the suite reported an error for this configuration
  // The strategy does not exist on this many nodes (the planner would have fallen back to
  // another; hybrid needs 4): failed too, but not a fault. `error` says why.
  bool not_possible = false;
  std::string error;
};

// The Server scenario through `dpushard serve` (bench_serve_load --search; the sweep role's
// serve step writes serve-<family>-<size>.json): the highest Poisson rate whose p99 through
// serve stayed under the in-process search's bound, and serve at the in-process Server rate.
struct ServeSearch {
  std::string file;
  std::string family;  // what was served, as the suite names it
  std::string size;    // "20M"
  int nodes = 0;
  std::string strategy;  // the suite's configuration (auto, or the one whose plan auto is)
  std::string plan_label;
  std::string backend;  // the workers' ("sim": serve ran --timing-only)
  std::string tensors;  // "binary" or "json"
  double bound_ms = 0;  // the p99 bound (the suite's latency_bound_ms)
  double top_rate = 0;  // the bisection's upper end (the suite's Offline rate)
  double rate = 0;      // the highest rate within the bound (0: none met it)
  double p50_ms = 0;    // at that rate
  double p99_ms = 0;
  int trials = 0;
  double failed = 0;  // requests that failed over the search
  // serve at the in-process Server rate (bench_serve_load --at-rate); absent when the
  // in-process search met the bound at no rate.
  bool at_rate_measured = false;
  double at_rate = 0;
  double at_achieved = 0;
  double at_p50_ms = -1;  // -1: no request succeeded
  double at_p99_ms = -1;
  double at_failed = 0;
};

// One serve search from bench_serve_load's JSON (`kind` "serve_server_search"); nullopt
// for any other document. A malformed one throws dpushard::Error naming `origin`.
std::optional<ServeSearch> parse_serve_search(const nlohmann::json& doc, const std::string& origin);

// The run context of one suite: Google Benchmark's own fields (date, host_name, num_cpus,
// ...) and the suite's (git_revision, backend, target, link_gbps, inventory, timing, ...).
struct SuiteContext {
  std::string file;
  std::map<std::string, std::string> values;
  std::string get(const std::string& key, const std::string& fallback = "") const;
};

struct RunResults {
  std::filesystem::path dir;
  std::vector<SuiteContext> suites;       // one per benchmark JSON file, by file name
  std::vector<Measurement> measurements;  // in file order, then benchmark order
  nlohmann::json env;                     // env.json; null when the folder has none
  std::vector<ServeSearch> serve;         // serve-*.json, by file name
};

// Parses one Google Benchmark JSON document (`origin` names it in errors) and appends its
// context and measurements. Entries that are not scaling configurations are ignored;
// a malformed scaling entry throws dpushard::Error naming the file and benchmark.
void parse_benchmark_json(const nlohmann::json& doc, const std::string& origin, RunResults& into);

// Reads every *.json in `dir` that is Google Benchmark output (has "context" and
// "benchmarks"), env.json and the serve searches (parse_serve_search). Throws dpushard::Error
// naming the file when one does not parse, or when the folder holds no scaling measurement at all.
RunResults read_results(const std::filesystem::path& dir);

}  // namespace dpushard::report
