#include "size_solver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "dpushard/base/error.hpp"

namespace dpushard::zoo {
namespace {

constexpr double kGoodError = 0.005;  // within 0.5 %: shape decides among these
constexpr double kMaxError = 0.05;    // the promise: within 5 %

double relative_error(std::int64_t params, std::int64_t target) {
  return std::abs(static_cast<double>(params - target)) / static_cast<double>(target);
}

struct Scored {
  const ShapeCandidate* candidate = nullptr;
  std::int64_t tail = 0;
  std::int64_t params = 0;
  double error = std::numeric_limits<double>::infinity();
  double misfit = std::numeric_limits<double>::infinity();
};

// Strictly better: ties keep the earlier candidate, so the choice is deterministic.
bool better(const Scored& a, const Scored& b) {
  const bool a_good = a.error <= kGoodError;
  const bool b_good = b.error <= kGoodError;
  if (a_good != b_good) return a_good;
  if (!a_good) return a.error < b.error;
  return a.misfit < b.misfit;
}

Scored solve_tail(const ShapeCandidate& c, std::int64_t target) {
  const std::int64_t max_tail = std::max<std::int64_t>(kMinTail, 16 * c.tail_nominal);
  const double exact = static_cast<double>(target - c.base) / static_cast<double>(c.slope);
  std::int64_t tail =
      std::clamp(static_cast<std::int64_t>(std::llround(exact)), kMinTail, max_tail);
  // A multiple of 16 when that costs little accuracy.
  const std::int64_t tail16 = std::clamp((tail + 8) / 16 * 16, kMinTail, max_tail);
  if (relative_error(c.base + tail16 * c.slope, target) <= kGoodError) tail = tail16;

  Scored s;
  s.candidate = &c;
  s.tail = tail;
  s.params = c.base + tail * c.slope;
  s.error = relative_error(s.params, target);
  s.misfit =
      c.misfit + std::abs(std::log(static_cast<double>(tail) /
                                   static_cast<double>(std::max<std::int64_t>(1, c.tail_nominal))));
  return s;
}

}  // namespace

SizeChoice solve_size(const std::string& family, std::int64_t target,
                      const std::vector<ShapeCandidate>& candidates) {
  Scored best;
  std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
  for (const ShapeCandidate& c : candidates) {
    const std::int64_t least = c.base + kMinTail * c.slope;
    smallest = std::min(smallest, least);
    if (least > target + target / 20) continue;
    const Scored s = solve_tail(c, target);
    if (better(s, best)) best = s;
  }
  if (best.candidate == nullptr || best.error > kMaxError) {
    const std::string closest = best.candidate == nullptr
                                    ? "the smallest model has " + std::to_string(smallest)
                                    : "the closest has " + std::to_string(best.params);
    throw Error(family + ": cannot reach " + std::to_string(target) +
                " parameters within 5 % with these experts and classes (" + closest + ")");
  }
  return {best.candidate->widths, best.tail, best.params};
}

}  // namespace dpushard::zoo
