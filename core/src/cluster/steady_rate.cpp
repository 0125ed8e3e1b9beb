#include "steady_rate.hpp"

#include <algorithm>
#include <cmath>
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

namespace {

using TimePoint = std::chrono::steady_clock::time_point;

// The steady window over sorted completions: completions first, first + c, ..., last (the
// ends of its whole cycles). points < 2: no window.
struct Window {
  std::size_t first = 0, c = 1, points = 0;
};

Window steady_window(const std::vector<TimePoint>& completions, int inflight, int cycle) {
  Window w;
  const std::size_t n = completions.size();
  if (n < 2) return w;
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
  w.first = first;
  w.c = c;
  w.points = (end - first) / c + 1;
  return w;
}

// The least-squares rate through the window's cycle ends from..to (inclusive): frames per
// second, 0 when it has fewer than two or they do not advance.
double fitted_rate(const std::vector<TimePoint>& completions, const Window& w, std::size_t from,
                   std::size_t to) {
  if (to <= from) return 0;
  const auto at = [&](std::size_t k) {
    return std::chrono::duration<double>(completions[w.first + k * w.c] - completions[w.first])
        .count();
  };
  const double count = static_cast<double>(to - from + 1);
  double mean_k = 0, mean_t = 0;
  for (std::size_t k = from; k <= to; ++k) {
    mean_k += static_cast<double>(k);
    mean_t += at(k);
  }
  mean_k /= count;
  mean_t /= count;
  double skt = 0, skk = 0;
  for (std::size_t k = from; k <= to; ++k) {
    const double dk = static_cast<double>(k) - mean_k;
    skt += dk * (at(k) - mean_t);
    skk += dk * dk;
  }
  const double seconds_per_cycle = skt / skk;
  return seconds_per_cycle > 0 ? static_cast<double>(w.c) / seconds_per_cycle : 0;
}

// |a - b| / (a + b): how far each of two readings lies from their mean, relative to it.
double apart(double a, double b) { return a + b > 0 ? std::fabs(a - b) / (a + b) : 0; }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

double steady_rate(std::vector<TimePoint> completions, int inflight, int cycle) {
  std::sort(completions.begin(), completions.end());
  const Window w = steady_window(completions, inflight, cycle);
  // The rate is the least-squares slope through the ends of the window's whole cycles
  // (completion first + k c at time t_k): every cycle boundary in the window weighs in, not
  // only its two ends, so one late or early completion at either end of the window moves the
  // rate by less (from the first and last alone, one late first completion of a 16-frame
  // window read a low-rate plan 3-5 % high). With two boundaries it is the rate between them.
  if (w.points < 2) return 0;
  return fitted_rate(completions, w, 0, w.points - 1);
}

double steady_rate_spread(std::vector<TimePoint> completions, int inflight, int cycle) {
  std::sort(completions.begin(), completions.end());
  const Window w = steady_window(completions, inflight, cycle);
  if (w.points < 5) return 0;  // each half needs two whole cycles
  const std::size_t middle = (w.points - 1) / 2;
  return apart(fitted_rate(completions, w, 0, middle),
               fitted_rate(completions, w, middle, w.points - 1));
}

double median_spread(const std::vector<double>& values) {
  if (values.size() < 4) return 0;
  const auto half = static_cast<std::ptrdiff_t>(values.size() / 2);
  return apart(median({values.begin(), values.begin() + half}),
               median({values.begin() + half, values.end()}));
}

}  // namespace dpushard::cluster
