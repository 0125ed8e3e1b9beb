#pragma once
// bench_serve_load --search: the Server scenario's rate search (server_search.hpp, the
// suites' bisection) with Poisson load through `dpushard serve`, and optionally serve
// measured at one given rate (the in-process orchestrator's Server rate).

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "serve_load/poisson_load.hpp"

namespace dpushard::bench {

struct RateSearchOptions {
  double bound_ms = 0;       // p99 bound
  double top_rate = 0;       // the bisection's upper end, requests/s
  int rates = 6;             // rates tried
  double min_seconds = 0.4;  // arrivals per trial: this long, and at least 64
  double at_rate = 0;        // > 0: serve measured at this rate too
};

// One trial's arrivals at `rate`: at least 64, and at least `min_seconds` long.
double trial_seconds(double rate, double min_seconds);

// Runs the search with `send` (run_poisson_load's), after an untimed warm-up (at half the
// top rate, two requests per sender on average), and returns {"bound_ms", "top_rate",
// "rate", "p50_ms", "p99_ms", "trials", "errors", "tried": [...], "warmup": {...},
// "at_rate": {...} (with at_rate > 0)}. A trial whose requests all failed stops the search
// and throws std::runtime_error naming the first error; a trial with some failed requests
// does not meet the bound (its failures are counted in "errors").
nlohmann::json search_rate(const RateSearchOptions& options, LoadOptions load,
                           const std::function<std::string(int sender)>& send);

// The result in a few human lines.
std::string describe_search(const nlohmann::json& search, const std::string& server);

}  // namespace dpushard::bench
