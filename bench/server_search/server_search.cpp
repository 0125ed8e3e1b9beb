// The Server scenario's bisection (server_search.hpp).

#include "server_search/server_search.hpp"

namespace dpushard::bench {

ServerSearchResult search_server_rate(
    const ServerSearchOptions& options,
    const std::function<ServerTrial(double rate, std::uint64_t seed)>& trial) {
  ServerSearchResult result;
  double lo = 0, hi = options.top_rate;
  for (int i = 0; i < options.rates; ++i) {
    const double rate = (lo + hi) / 2;
    bool met = false;
    for (int attempt = 0; attempt < 2 && !met; ++attempt) {
      const ServerTrial t = trial(rate, static_cast<std::uint64_t>(2 * i + attempt));
      if (!t.complete) {
        result.error = t.error.empty() ? "a trial did not complete" : t.error;
        return result;
      }
      result.wall_s += t.wall_s;
      ++result.trials;
      met = t.p99_ms <= options.bound_ms;
      if (met && rate > result.rate) {
        result.rate = rate;
        result.p50_ms = t.p50_ms;
        result.p99_ms = t.p99_ms;
      }
    }
    (met ? lo : hi) = rate;
    if (!met && rate <= options.top_rate / 8) break;
  }
  return result;
}

}  // namespace dpushard::bench
