// Householder QR least squares (least_squares.hpp).

#include "least_squares.hpp"

#include <cmath>

namespace dpushard::perf {

std::optional<LeastSquaresSolution> solve_least_squares(
    const std::vector<std::vector<double>>& rows, const std::vector<double>& b,
    std::size_t& deficient) {
  const std::size_t n = rows.size();
  const std::size_t k = n == 0 ? 0 : rows[0].size();
  if (n < k) {
    deficient = n;
    return std::nullopt;
  }
  std::vector<std::vector<double>> a = rows;  // n x k, reduced in place to R
  std::vector<double> y = b;
  // Unit-norm columns: the figures differ by orders of magnitude (ms per cycle, per byte).
  std::vector<double> scale(k, 0.0);
  for (std::size_t j = 0; j < k; ++j) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += a[i][j] * a[i][j];
    scale[j] = std::sqrt(sum);
    if (!(scale[j] > 0)) {
      deficient = j;
      return std::nullopt;
    }
    for (std::size_t i = 0; i < n; ++i) a[i][j] /= scale[j];
  }
  for (std::size_t j = 0; j < k; ++j) {
    double norm = 0;
    for (std::size_t i = j; i < n; ++i) norm += a[i][j] * a[i][j];
    norm = std::sqrt(norm);
    // What is left of a unit column after the ones before it are taken out.
    if (norm < 1e-9) {
      deficient = j;
      return std::nullopt;
    }
    const double alpha = a[j][j] > 0 ? -norm : norm;
    std::vector<double> v(n - j);
    for (std::size_t i = j; i < n; ++i) v[i - j] = a[i][j];
    v[0] -= alpha;
    double v2 = 0;
    for (const double e : v) v2 += e * e;
    if (v2 == 0) continue;
    for (std::size_t c = j; c < k; ++c) {
      double s = 0;
      for (std::size_t i = j; i < n; ++i) s += v[i - j] * a[i][c];
      for (std::size_t i = j; i < n; ++i) a[i][c] -= 2 * s / v2 * v[i - j];
    }
    double s = 0;
    for (std::size_t i = j; i < n; ++i) s += v[i - j] * y[i];
    for (std::size_t i = j; i < n; ++i) y[i] -= 2 * s / v2 * v[i - j];
  }
  LeastSquaresSolution out;
  out.x.assign(k, 0.0);
  for (std::size_t jj = k; jj-- > 0;) {
    double s = y[jj];
    for (std::size_t c = jj + 1; c < k; ++c) s -= a[jj][c] * out.x[c];
    out.x[jj] = s / a[jj][jj];
  }
  for (std::size_t i = k; i < n; ++i) out.residual_sum_of_squares += y[i] * y[i];
  // R^-1 (upper triangular), then diag(R^-1 R^-T) = the row sums of its squares.
  std::vector<std::vector<double>> inv(k, std::vector<double>(k, 0.0));
  for (std::size_t c = 0; c < k; ++c) {
    for (std::size_t r = c + 1; r-- > 0;) {
      double s = r == c ? 1.0 : 0.0;
      for (std::size_t m = r + 1; m <= c; ++m) s -= a[r][m] * inv[m][c];
      inv[r][c] = s / a[r][r];
    }
  }
  out.variance.assign(k, 0.0);
  for (std::size_t r = 0; r < k; ++r)
    for (std::size_t c = r; c < k; ++c) out.variance[r] += inv[r][c] * inv[r][c];
  for (std::size_t j = 0; j < k; ++j) {
    out.x[j] /= scale[j];
    out.variance[j] /= scale[j] * scale[j];
  }
  return out;
}

}  // namespace dpushard::perf
