#pragma once
// From measurements to the report's numbers: each configuration against the 1-node
// baseline of the same model (speedup, latency speedup, parallel efficiency), and the
// break-even model size per node count and strategy.

#include <optional>
#include <string>
#include <vector>

#include "results.hpp"

namespace dpushard::report {

// One configuration compared with the 1-node run of the same model.
struct Row {
  Measurement m;  // Offline (throughput) where the run has scenarios
  // The SingleStream measurement of the same configuration (its p50/p90/p99 replace m's:
  // every latency figure comes from it alone); latency_scenario says where m's latencies
  // come from: "SingleStream", or "" (a run without scenarios: under load).
  bool has_single_stream = false;
  double offline_p99_ms = 0;  // the Offline run's own p99 (queueing included)
  std::string latency_scenario;
  bool has_baseline = false;
  double speedup = 0;          // fps / fps on one node (throughput)
  double latency_speedup = 0;  // p50 on one node / p50 (0 when a p50 is missing)
  double efficiency = 0;       // speedup / nodes
  // The speedup's 95 % interval: the repetitions' intervals of both fps, combined the
  // conservative way (lowest over highest, highest over lowest).
  double speedup_lo = 0;
  double speedup_hi = 0;
  // The run's own spread of each speedup: the two measurements' halves apart, summed (this
  // configuration's and its 1-node baseline's fps_spread, or their SingleStream p50_spread);
  // 0 when the suite did not record them. The break-even rule uses it in place of the noise
  // margin where it is larger.
  double speedup_spread = 0;
  double latency_spread = 0;
  // The 1-node baseline's own node bound (0: not known): with it and this row's, the
  // bounds decide what the plan can do and the efficiency check is not needed.
  double baseline_bound_node_fps = 0;
  // fps / fps of replicate (data parallel) on as many nodes, the same model (0: no such
  // measurement); the model-parallel plans' gain over simply running N copies.
  double vs_replicate = 0;
  double fit = 0;     // measured fps / predicted fps (0: no prediction)
  std::string cause;  // for a fit off by more than kFitTolerance: the measured reason
  // Not empty: the measurement cannot be true (above what the plan's busiest node, links
  // or the head node's port allow, or above 100 % parallel efficiency), and why. Such a
  // row is shown as a measurement error and kept out of the break-evens.
  std::string measurement_error;
};

// A rate more than this above a hard bound (measurement_error) is an error.
inline constexpr double kBoundTolerance = 0.02;
// Parallel efficiency above 1 by more than this is an error (the repetitions of one
// configuration spread by about this much). Only where the plan's or the baseline's node
// bound is not known: with both, the bound check holds the rate to what the plan can do,
// and an efficiency above 1 says the 1-node baseline read low (two quiet runs struck out a
// 3-node plan at 101.5 % whose rate was 1.5 % under its bound, and a 2-node replicate at
// 101.5 %, 0.9 % under it, each in one run only).
inline constexpr double kEfficiencyTolerance = 0.005;

// Why `row` cannot be a true measurement (measurement_error), or "" when it can.
std::string measurement_error(const Row& row);

// The planner's --max-latency-ms objective judged against a Server result: whether the p99
// at the highest rate Server found stays under the bound the planner was given ("met: ...",
// "missed: ..."), or "" when the plan was made without one.
struct LatencyBoundVerdict {
  enum class Kind { NoBound, Met, Missed, Unknown };
  Kind kind = Kind::NoBound;
  std::string text;
};
LatencyBoundVerdict latency_bound_verdict(const Measurement& server);

// Predicted and measured fps agree when their ratio is within this of 1.
inline constexpr double kFitTolerance = 0.10;
// The models the agreement is required for (smaller ones are reported all the same).
inline constexpr double kFitMinParams = 5e6;

// Why measured and predicted fps differ, named from the measurements of `m` (the busiest
// node's time against the plan's, the workers' and the orchestrator's CPU time, the link,
// idle nodes). Empty when no measured component explains it.
std::string fit_cause(const Measurement& m, double link_gbps);

struct Size {
  std::string label;  // as swept: "10M"
  double params = 0;  // measured parameter count
};

// The smallest model size from which N nodes beat one at every larger size measured: the
// speedup's whole 95 % interval above 1 + the minimum gain (with one repetition, its value).
struct BreakEven {
  enum class Kind {
    Always,       // beats one node at every size measured, the smallest included
    From,         // from `size` on
    Never,        // not at the largest size measured
    NoData,       // no successful measurement of this configuration
    NotPossible,  // the strategy exists on no size measured at this node count
    // Cannot beat one node here by construction, whatever it reads: a data-parallel plan
    // (the strategy table's baseline) with one frame in flight (SingleStream latency) runs
    // each frame whole on one node. `read_lo`-`read_hi`: the speedups it read.
    NoGain,
  };
  int nodes = 0;
  std::string strategy;
  Kind kind = Kind::NoData;
  Size size;      // Always: the smallest size; From: the break-even size; Never: the largest
  double at = 0;  // the speedup at `size`
  double at_lo = 0, at_hi = 0;      // its interval
  double read_lo = 0, read_hi = 0;  // NoGain: the lowest and highest speedup measured
  // The answer depends on noise: a size at or below `size` (or the largest, for Never)
  // whose speedup lies within the noise margin of the threshold, on either side of it, so a
  // second run may read it on the other side. The cell is then the range from `reach` (the
  // smallest size the break-even moves to if those sizes count as wins; `reach_smallest`:
  // the smallest size measured) to `size` (where it stays if they count as losses), the same
  // whichever side this run read them on; the straddling sizes with their speedup and
  // interval are in `straddling`.
  bool noisy = false;
  Size reach;
  bool reach_smallest = false;
  struct Straddle {
    std::string size;
    double at = 0, lo = 0, hi = 0;
    double spread = 0;  // the run's own spread, where it was wider than the margin (0: not)
  };
  std::vector<Straddle> straddling;
};

struct FamilyAnalysis {
  std::string family;
  bool scenarios = false;               // the run measured SingleStream and Offline apart
  std::vector<Size> sizes;              // ascending by parameter count
  std::vector<int> node_counts;         // ascending, 1 included when measured
  std::vector<std::string> strategies;  // experts, pipeline, replicate, hybrid, auto, others
  std::vector<Row> rows;                // by size, node count, strategy
  std::vector<BreakEven> throughput_break_even;  // by node count (> 1), strategy
  std::vector<BreakEven> latency_break_even;
  std::vector<Measurement> server;  // the Server scenario's results, in suite order

  // The row of a configuration; the 1-node baseline is found with nodes == 1 and any
  // strategy. Null when it was not measured.
  const Row* find(const std::string& size, int nodes, const std::string& strategy) const;
};

// A gain smaller than this does not count as beating one node: it buys little for a second
// board, and gains this small decided the pipeline cells by chance (three runs of the main
// job gave three pipeline break-evens; docs/benchmarking.md "Break-even").
inline constexpr double kDefaultMinGain = 0.05;

// How far two runs of the main job at one commit read the same speedup apart: a speedup
// within a factor of (1 + this) of the threshold, on either side, is marked as decided by
// noise (BreakEven::noisy) instead of deciding its cell. From two quiet runs at one commit
// (20261205-113616-local, the reference, and 20261205-114556-local; 138 speedups each):
// |speedup ratio - 1| had median 0.3 %, p90 2.6 %, p95 6.1 % (Offline throughput) and median
// 1.2 %, p90 5.3 %, p95 6.6 % (SingleStream p50); the rates alone spread p95 5.1 % and 6.1 %.
// 7 % covers the p95 of both. A constant, not the run's own repetitions: repetitions within
// one run share its load and do not see the spread between runs (docs/benchmarking.md,
// "Break-even"), and the main job runs one; their interval widens the band where wider.
inline constexpr double kDefaultNoiseMargin = 0.07;

struct AnalysisOptions {
  double min_gain = kDefaultMinGain;  // N nodes beat one when speedup > 1 + min_gain
  double noise_margin = kDefaultNoiseMargin;
};

// The machine's load when a suite started (Google Benchmark's context: `load_avg`, the
// 1-minute figure, and `num_cpus`). On a busy machine the workers' and the orchestrator's
// real CPU work waits for other processes, and measured fps fall short of modeled ones.
struct SuiteLoad {
  std::string suite;  // the JSON file
  double load = -1;   // 1-minute load average; -1 when the suite did not record it
  int cpus = 0;       // 0 when not recorded
  bool busy() const { return cpus > 0 && load > cpus; }
};

struct Analysis {
  double min_gain = kDefaultMinGain;  // as analysed
  double noise_margin = kDefaultNoiseMargin;
  std::vector<SuiteLoad> loads;          // one per suite, in file order
  std::vector<FamilyAnalysis> families;  // in order of first appearance
  std::vector<Measurement> failed;       // configurations the suites reported as failed
  std::string backend;                   // from the suites' context ("mixed" when they differ)
  bool modeled = false;                  // every suite ran on the sim backend
  std::string timing_label;              // what the times come from: "sim backend: ..."
  std::string link_label;                // "emulated 1 Gbit/s (paced)", "unshaped (loopback)"
  double link_gbps = 0;
  std::string objective;  // the plans' objective (the suites' context; empty: not recorded)
};

// Whether times on `backend` are modeled (sim), and where they come from, in words.
bool backend_is_modeled(const std::string& backend);
// The run's link in words, from the suites' context: `emulation` "paced" or "off".
std::string link_label(const std::string& emulation, const std::string& gbps,
                       const std::string& latency_us, bool loopback);
std::string timing_label(const std::string& backend);

Analysis analyze(const RunResults& results, const AnalysisOptions& options = {});

// The break-even of `rows` (one configuration at increasing sizes); `metric` picks the
// speedup and `lower`/`upper`, when given, its repetitions' interval. Each row's interval is
// its value divided and multiplied by 1 + the larger of `noise_margin` and its
// `own_spread` (the run's own spread of that speedup, when given), widened to the
// repetitions' where that is wider. Walking down from the largest size, the break-even is where the
// intervals stop lying wholly above 1 + `min_gain`; when an interval that straddles the
// threshold (lower end at or below it, upper end above) stopped the walk, the cell is marked
// as noise and `reach` says how far down straddling intervals would take it. Exposed for
// tests.
BreakEven break_even(const std::vector<const Row*>& rows_by_size, double Row::*metric,
                     double Row::*lower = nullptr, double Row::*upper = nullptr,
                     double min_gain = 0, double noise_margin = 0,
                     double Row::*own_spread = nullptr);

}  // namespace dpushard::report
