#include "steady_rate.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace dpushard::cluster {

int frame_cycle(const Plan& plan) {
  if (!plan.frame_share.empty()) {
    const int sum = std::accumulate(plan.frame_share.begin(), plan.frame_share.end(), 0);
    return std::max(sum, 1);
  }
  std::size_t copies = 1;
  for (const auto& f : plan.fragments) copies = std::max(copies, f.nodes.size());
  return static_cast<int>(copies);
}

std::vector<std::chrono::steady_clock::duration> poisson_arrivals(double rate, std::uint64_t frames,
                                                                  std::uint64_t seed) {
  using Duration = std::chrono::steady_clock::duration;
  std::vector<Duration> at;
  if (!(rate > 0)) return at;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  Duration t{};
  for (std::uint64_t f = 0; f < frames; ++f) {
    t += std::chrono::duration_cast<Duration>(std::chrono::duration<double>(gap(rng)));
    at.push_back(t);
  }
  return at;
}

double steady_rate(std::vector<std::chrono::steady_clock::time_point> completions, int inflight,
                   int cycle) {
  const std::size_t n = completions.size();
  if (n < 2) return 0;
  std::sort(completions.begin(), completions.end());
  auto c = static_cast<std::size_t>(std::max(cycle, 1));
  if (n < 2 * c) c = 1;  // too short for a cycle after the first: the plain rule
  const std::size_t fill =
      std::clamp<std::size_t>(static_cast<std::size_t>(std::max(inflight, 1)), 1, n / 2);
  // The drain: after the (n - inflight)-th completion no frame is left to launch, so the
  // window empties and the last frames finish without the frames behind them (a fragment
  // that shares its board with an earlier one no longer waits for that one's next frame):
  // counted to the end, a 3-node experts plan read 5 % above what its busiest board can do.
  // The window ends at the last completion the full window preceded (index n - inflight).
  const std::size_t full = static_cast<std::size_t>(std::max(inflight, 1));
  // `first`: the last completion of the cycle that ends the fill; at least one whole cycle
  // must follow it before the drain (or, in a stream too short for that, before the end).
  const std::size_t fill_end = (fill + c - 1) / c * c - 1;
  std::size_t end = n > full ? n - full : 0;
  if (end < fill_end + c) end = n - 1;  // too short to leave out the drain as well
  std::size_t first = fill_end;
  while (first >= c && first + c > end) first -= c;
  const std::size_t last = first + (end - first) / c * c;
  const double seconds =
      std::chrono::duration<double>(completions[last] - completions[first]).count();
  return seconds > 0 ? static_cast<double>(last - first) / seconds : 0;
}

}  // namespace dpushard::cluster
