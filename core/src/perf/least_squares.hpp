#pragma once
// A small dense linear least squares (Householder QR), for the calibration fit: a handful of
// unknowns, tens of equations. No dependency beyond the standard library.

#include <cstddef>
#include <optional>
#include <vector>

namespace dpushard::perf {

struct LeastSquaresSolution {
  std::vector<double> x;         // minimises |A x - b|
  std::vector<double> variance;  // diag((A^T A)^-1): x's variances per unit residual variance
  double residual_sum_of_squares = 0;
};

// `rows`: A by rows, each of the same length k <= rows.size(). Columns are scaled to unit
// norm before the factorisation. Returns nullopt with `deficient` set to the first column
// that is (numerically) a combination of the ones before it, or all zero.
std::optional<LeastSquaresSolution> solve_least_squares(
    const std::vector<std::vector<double>>& rows, const std::vector<double>& b,
    std::size_t& deficient);

}  // namespace dpushard::perf
