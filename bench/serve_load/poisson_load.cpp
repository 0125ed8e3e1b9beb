// The Poisson schedule and its senders.

#include "poisson_load.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <random>
#include <thread>

namespace dpushard::bench {

double LoadResult::percentile_ms(double p) const {
  if (latency_ms.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * double(latency_ms.size())));
  return latency_ms[std::min(latency_ms.size() - 1, rank == 0 ? 0 : rank - 1)];
}

LoadResult run_poisson_load(const LoadOptions& options,
                            const std::function<std::string(int sender)>& send) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> due_s;  // offsets from the start
  std::mt19937_64 random(options.seed);
  std::exponential_distribution<double> gap(options.rate);
  for (double t = gap(random); t < options.duration_s; t += gap(random)) due_s.push_back(t);

  LoadResult result;
  std::mutex mutex;
  std::atomic<std::size_t> next{0};
  const auto start = Clock::now();
  auto last_reply = start;
  auto sender = [&](int id) {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= due_s.size()) return;
      const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(due_s[i]));
      std::this_thread::sleep_until(due);
      const std::string error = send(id);
      const auto done = Clock::now();
      std::lock_guard lock(mutex);
      ++result.sent;
      last_reply = std::max(last_reply, done);
      if (error.empty()) {
        ++result.ok;
        result.latency_ms.push_back(std::chrono::duration<double, std::milli>(done - due).count());
      } else {
        ++result.errors[error];
      }
    }
  };
  std::vector<std::thread> senders;
  for (int i = 0; i < std::max(1, options.concurrency); ++i) senders.emplace_back(sender, i);
  for (auto& s : senders) s.join();
  result.elapsed_s = std::chrono::duration<double>(last_reply - start).count();
  std::sort(result.latency_ms.begin(), result.latency_ms.end());
  return result;
}

}  // namespace dpushard::bench
