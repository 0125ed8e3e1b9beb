// bench_serve_load --search (rate_search.hpp).

#include "serve_load/rate_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "server_search/server_search.hpp"

namespace dpushard::bench {

using nlohmann::json;

double trial_seconds(double rate, double min_seconds) { return std::max(min_seconds, 64.0 / rate); }

namespace {

std::size_t error_count(const LoadResult& r) {
  std::size_t n = 0;
  for (const auto& [label, count] : r.errors) n += count;
  return n;
}

json trial_json(double rate, const LoadResult& r) {
  json errors = json::object();
  for (const auto& [label, n] : r.errors) errors[label] = n;
  auto ms = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  return {{"rate", rate},
          {"sent", r.sent},
          {"ok", r.ok},
          {"errors", errors},
          {"achieved_rate", r.achieved_rate()},
          {"p50_ms", ms(r.percentile_ms(50))},
          {"p99_ms", ms(r.percentile_ms(99))}};
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

json search_rate(const RateSearchOptions& options, LoadOptions load,
                 const std::function<std::string(int sender)>& send) {
  json tried = json::array();
  std::size_t errors = 0;
  auto run_at = [&](double rate, std::uint64_t seed) {
    load.rate = rate;
    load.duration_s = trial_seconds(rate, options.min_seconds);
    load.seed = seed;
    return run_poisson_load(load, send);
  };
  // Untimed first: every connection opened, the cluster's stream and serve's queue warm (the
  // suites' search follows the configuration's Offline runs on the same workers).
  LoadOptions warm = load;
  warm.rate = options.top_rate / 2;
  warm.duration_s = std::max(0.25, 2.0 * std::max(1, load.concurrency) / warm.rate);
  warm.seed = 999;
  const LoadResult warmed = run_poisson_load(warm, send);
  ServerSearchOptions search;
  search.top_rate = options.top_rate;
  search.bound_ms = options.bound_ms;
  search.rates = options.rates;
  const ServerSearchResult found = search_server_rate(search, [&](double rate, std::uint64_t seed) {
    const LoadResult r = run_at(rate, seed);
    tried.push_back(trial_json(rate, r));
    errors += error_count(r);
    ServerTrial t;
    if (r.ok == 0) {
      t.error = r.errors.empty() ? "no request was sent" : r.errors.begin()->first;
      return t;
    }
    t.complete = true;
    t.p50_ms = r.percentile_ms(50);
    // A failed request is a request not served within any bound.
    t.p99_ms = error_count(r) > 0 ? std::numeric_limits<double>::infinity() : r.percentile_ms(99);
    t.wall_s = r.elapsed_s;
    return t;
  });
  if (!found.error.empty())
    throw std::runtime_error("--search: every request at " +
                             fixed(tried.back()["rate"].get<double>(), 1) +
                             "/s failed: " + found.error);
  json result = {{"bound_ms", options.bound_ms},
                 {"top_rate", options.top_rate},
                 {"rate", found.rate},
                 {"p50_ms", found.p50_ms},
                 {"p99_ms", found.p99_ms},
                 {"trials", found.trials},
                 {"errors", errors},
                 {"tried", tried}};
  result["warmup"] = trial_json(warm.rate, warmed);
  if (options.at_rate > 0) {
    const LoadResult r = run_at(options.at_rate, 1000);
    result["at_rate"] = trial_json(options.at_rate, r);
  }
  return result;
}

std::string describe_search(const json& search, const std::string& server) {
  std::string out = "Server scenario through serve " + server + ": p99 bound " +
                    fixed(search["bound_ms"].get<double>(), 2) + " ms, rates up to " +
                    fixed(search["top_rate"].get<double>(), 1) + "/s\n";
  out += "  highest rate within the bound: " + fixed(search["rate"].get<double>(), 1) + "/s (p50 " +
         fixed(search["p50_ms"].get<double>(), 2) + " ms, p99 " +
         fixed(search["p99_ms"].get<double>(), 2) + " ms) in " +
         std::to_string(search["trials"].get<int>()) + " trials, " +
         std::to_string(search["errors"].get<std::size_t>()) + " failed requests\n";
  if (search.contains("at_rate")) {
    const json& at = search["at_rate"];
    auto ms = [](const json& v) {
      return v.is_null() ? std::string("-") : fixed(v.get<double>(), 2);
    };
    std::size_t failed = 0;
    for (const auto& [label, n] : at["errors"].items()) failed += n.get<std::size_t>();
    out += "  at " + fixed(at["rate"].get<double>(), 1) + "/s: achieved " +
           fixed(at["achieved_rate"].get<double>(), 1) + "/s, p50 " + ms(at["p50_ms"]) +
           " ms, p99 " + ms(at["p99_ms"]) + " ms, " + std::to_string(failed) + " failed\n";
  }
  return out;
}

}  // namespace dpushard::bench
