// Choosing power-of-two fix points: the largest one without clipping, and the one with
// the least squared quantization error among its neighbours.
#include <cmath>
#include <limits>

#include "dpushard/quant/quantize.hpp"

namespace dpushard {

int max_fix_point(double max_abs) {
  if (!(max_abs > 0.0) || !std::isfinite(max_abs)) return 7;  // all zeros: any fix point is exact
  const int fp = static_cast<int>(std::floor(std::log2(127.0 / max_abs)));
  return std::max(-24, std::min(24, fp));
}

int best_fix_point(std::span<const float> values, RoundMode mode, int lo, int hi) {
  int best = lo;
  double best_err = std::numeric_limits<double>::infinity();
  for (int fp = lo; fp <= hi; ++fp) {
    const double scale = std::ldexp(1.0, fp), inv = std::ldexp(1.0, -fp);
    double err = 0.0;
    for (float v : values) {
      const double x = v;
      const double q = std::fmax(-128.0, std::fmin(127.0, round_with(mode, x * scale)));
      err += (x - q * inv) * (x - q * inv);
    }
    if (err < best_err) {
      best_err = err;
      best = fp;
    }
  }
  return best;
}

}  // namespace dpushard
