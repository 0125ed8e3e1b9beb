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
  // The rate is the least-squares slope through the ends of the window's whole cycles
  // (completion first + k c at time t_k): every cycle boundary in the window weighs in, not
  // only its two ends, so one late or early completion at either end of the window moves the
  // rate by less (from the first and last alone, one late first completion of a 16-frame
  // window read a low-rate plan 3-5 % high). With two boundaries it is the rate between them.
  const std::size_t points = (last - first) / c + 1;
  if (points < 2) return 0;
  const auto at = [&](std::size_t k) {
    return std::chrono::duration<double>(completions[first + k * c] - completions[first]).count();
  };
  double mean_k = 0, mean_t = 0;
  for (std::size_t k = 0; k < points; ++k) {
    mean_k += static_cast<double>(k);
    mean_t += at(k);
  }
  mean_k /= static_cast<double>(points);
  mean_t /= static_cast<double>(points);
  double skt = 0, skk = 0;
  for (std::size_t k = 0; k < points; ++k) {
    const double dk = static_cast<double>(k) - mean_k;
    skt += dk * (at(k) - mean_t);
    skk += dk * dk;
  }
  const double seconds_per_cycle = skt / skk;
  return seconds_per_cycle > 0 ? static_cast<double>(c) / seconds_per_cycle : 0;
}

}  // namespace dpushard::cluster
