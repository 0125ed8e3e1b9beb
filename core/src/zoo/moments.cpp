#include "moments.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

namespace dpushard::zoo {
namespace {

// Nodes and weights of a normalised quadrature for a standard normal variable:
// midpoints over [-7, 7] weighted by the density, weights summing to one.
constexpr int kNodes = 71;

struct Quadrature {
  std::array<double, kNodes> x{};
  std::array<double, kNodes> w{};
};

const Quadrature& standard_normal() {
  static const Quadrature q = [] {
    Quadrature r;
    constexpr double kHalfWidth = 7.0;
    const double step = 2.0 * kHalfWidth / kNodes;
    double total = 0.0;
    for (int i = 0; i < kNodes; ++i) {
      const double x = -kHalfWidth + (i + 0.5) * step;
      const auto index = static_cast<std::size_t>(i);
      r.x[index] = x;
      r.w[index] = std::exp(-0.5 * x * x);
      total += r.w[index];
    }
    for (double& w : r.w) w /= total;
    return r;
  }();
  return q;
}

// E over shared_c ~ N(0, shared), spread ~ N(0, spread) of f(mean + shared_c + spread),
// reduced to the moment model of f's output.
template <typename F>
Moments after_elementwise(const Moments& x, F f) {
  const Quadrature& q = standard_normal();
  const double s_shared = std::sqrt(std::max(x.shared, 0.0));
  const double s_spread = std::sqrt(std::max(x.spread, 0.0));
  double mean = 0.0;
  double shared_sq = 0.0;  // E_c[(E_p f)^2]
  double m2 = 0.0;
  for (std::size_t i = 0; i < q.x.size(); ++i) {
    double inner = 0.0;
    double inner_sq = 0.0;
    for (std::size_t j = 0; j < q.x.size(); ++j) {
      const double y = f(x.mean + s_shared * q.x[i] + s_spread * q.x[j]);
      inner += q.w[j] * y;
      inner_sq += q.w[j] * y * y;
    }
    mean += q.w[i] * inner;
    shared_sq += q.w[i] * inner * inner;
    m2 += q.w[i] * inner_sq;
  }
  Moments out;
  out.mean = mean;
  out.shared = std::max(shared_sq - mean * mean, 0.0);
  out.spread = std::max(m2 - shared_sq, 0.0);
  return out;
}

}  // namespace

Moments independent(double m2) { return Moments{0.0, 0.0, m2}; }

Moments after_linear(const Moments& x, double gain, double bias_var) {
  // Zero-mean weights turn the common mean into per-output-channel offsets.
  return Moments{0.0, gain * (x.mean * x.mean + x.shared) + bias_var, gain * x.spread};
}

Moments after_relu(const Moments& x) {
  return after_elementwise(x, [](double v) { return v > 0.0 ? v : 0.0; });
}

Moments after_gelu(const Moments& x) {
  return after_elementwise(
      x, [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2)); });
}

namespace {
double relu6(double v) { return std::clamp(v, 0.0, 6.0); }
}  // namespace

Moments after_hard_sigmoid(const Moments& x) {
  return after_elementwise(x, [](double v) { return relu6(v + 3.0) / 6.0; });
}

Moments after_hard_swish(const Moments& x) {
  return after_elementwise(x, [](double v) { return v * relu6(v + 3.0) / 6.0; });
}

Moments after_layernorm(const Moments& x, double gamma_m2, double beta_var) {
  const double variance = x.shared + x.spread;
  if (variance <= 0.0) return Moments{0.0, beta_var, 0.0};
  return Moments{0.0, gamma_m2 * x.shared / variance + beta_var, gamma_m2 * x.spread / variance};
}

Moments after_mean(const Moments& x, std::int64_t positions) {
  return Moments{x.mean, x.shared,
                 x.spread / static_cast<double>(std::max<std::int64_t>(1, positions))};
}

Moments sum(const Moments& a, const Moments& b) {
  return Moments{a.mean + b.mean, a.shared + b.shared, a.spread + b.spread};
}

Moments product(const Moments& a, const Moments& b) {
  const double mean = a.mean * b.mean;
  // Per channel: (mean_a + shared_a,c)(mean_b + shared_b,c); in total: E[a^2] E[b^2].
  const double channel_m2 = (a.mean * a.mean + a.shared) * (b.mean * b.mean + b.shared);
  const double shared = std::max(channel_m2 - mean * mean, 0.0);
  return Moments{mean, shared, std::max(a.m2() * b.m2() - channel_m2, 0.0)};
}

Moments mixture(const Moments& a, double weight_a, const Moments& b, double weight_b) {
  const double total = weight_a + weight_b;
  const double wa = weight_a / total;
  const double wb = weight_b / total;
  const double mean = wa * a.mean + wb * b.mean;
  // Differences between the parts' means become per-channel offsets.
  const double second = wa * (a.mean * a.mean + a.shared) + wb * (b.mean * b.mean + b.shared);
  return Moments{mean, std::max(second - mean * mean, 0.0), wa * a.spread + wb * b.spread};
}

int activation_fix_point(double m2) {
  constexpr double kTargetRms = 24.0;  // int8 levels
  if (!(m2 > 0.0)) return 7;
  const double fp = std::floor(std::log2(kTargetRms / std::sqrt(m2)));
  return static_cast<int>(std::clamp(fp, -16.0, 24.0));
}

}  // namespace dpushard::zoo
