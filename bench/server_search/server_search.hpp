#pragma once
// MLPerf LoadGen's Server scenario as a search: the highest Poisson arrival rate whose p99
// latency stays under a bound, by bisection between 0 and a top rate (the configuration's
// Offline rate). One search, whatever runs the trials: the scaling suites' in-process
// orchestrator (bench/scaling/suite.cpp) and bench_serve_load against `dpushard serve`.

#include <cstdint>
#include <functional>
#include <string>

namespace dpushard::bench {

// One trial: Poisson arrivals at `rate` with arrival schedule `seed`.
struct ServerTrial {
  bool complete = false;  // false: the trial failed (`error`), the search stops
  std::string error;
  double p50_ms = 0;
  double p99_ms = 0;
  double wall_s = 0;  // the trial's span, for the benchmark's iteration time
};

struct ServerSearchResult {
  double rate = 0;  // the highest rate tried whose p99 stayed under the bound (0: none)
  double p50_ms = 0;
  double p99_ms = 0;  // at that rate
  int trials = 0;     // trials run (a rate that missed is tried twice)
  double wall_s = 0;  // sum of the trials' spans
  std::string error;  // a trial failed: the search stopped there
};

struct ServerSearchOptions {
  double top_rate = 0;  // the bisection's upper end (frames/s)
  double bound_ms = 0;  // the p99 bound
  int rates = 6;        // rates tried (--server-trials)
};

// Tries `options.rates` rates, each the middle of [lo, hi] (lo = 0, hi = top_rate at
// first): a rate whose p99 is within the bound raises lo, one that misses lowers hi. A rate
// that misses is tried once more with another schedule (on a shared machine one late timer
// decides a p99 of 64 frames). A miss at an eighth of the top rate or less ends the search:
// the plan is busy at most an eighth of the time, so its tail is no queue a lower rate would
// shorten. Rate i's attempts use seeds 2i and 2i+1.
ServerSearchResult search_server_rate(
    const ServerSearchOptions& options,
    const std::function<ServerTrial(double rate, std::uint64_t seed)>& trial);

}  // namespace dpushard::bench
