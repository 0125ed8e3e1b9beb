#include "steady_rate.hpp"

#include <algorithm>

namespace dpushard::cluster {

double steady_rate(const std::vector<std::chrono::steady_clock::time_point>& completions,
                   int inflight) {
  const std::size_t n = completions.size();
  if (n < 2) return 0;
  const std::size_t fill =
      std::clamp<std::size_t>(static_cast<std::size_t>(std::max(inflight, 1)), 1, n / 2);
  const double seconds =
      std::chrono::duration<double>(completions.back() - completions[fill - 1]).count();
  return seconds > 0 ? static_cast<double>(n - fill) / seconds : 0;
}

}  // namespace dpushard::cluster
