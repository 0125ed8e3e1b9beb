#pragma once
// Poisson-timed load: request i is due at t_i (exponential gaps, mean 1/rate), taken by the
// first free of `concurrency` senders; its latency runs from t_i, not from when a sender got
// to it, so a server that falls behind shows it (no coordinated omission).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace dpushard::bench {

struct LoadOptions {
  double rate = 100;      // requests per second offered
  double duration_s = 5;  // requests due within it are sent
  int concurrency = 16;   // senders (connections)
  std::uint64_t seed = 1;
};

struct LoadResult {
  std::size_t sent = 0;
  std::size_t ok = 0;
  std::map<std::string, std::size_t> errors;  // by label ("503", "connection: ...")
  double elapsed_s = 0;                       // first due time to last reply
  std::vector<double> latency_ms;             // successful requests, sorted

  double achieved_rate() const { return elapsed_s > 0 ? double(ok) / elapsed_s : 0; }
  double percentile_ms(double p) const;  // NaN without successes
};

// `send(sender)` makes one request on sender `sender`'s own connection or slot; it returns
// "" on success, else what went wrong (counted in errors).
LoadResult run_poisson_load(const LoadOptions& options,
                            const std::function<std::string(int sender)>& send);

}  // namespace dpushard::bench
