// DPU fixed-point arithmetic: rounding modes, quantization and the average-pool factor.
// The facts behind every rule are in ../shared/VITIS_AI.md section 2 and docs/numerics.md.

#include "dpushard/graph/numerics.hpp"

#include <bit>
#include <cmath>
#include <string>

#include "dpushard/base/error.hpp"

namespace dpushard {

RoundMode parse_round_mode(std::string_view name) {
  if (name == "STD_ROUND") return RoundMode::Std;
  if (name == "DPU_ROUND") return RoundMode::Dpu;
  if (name == "PY3_ROUND") return RoundMode::Py3;
  throw Error("unknown round_mode '" + std::string(name) +
              "' (expected STD_ROUND, DPU_ROUND or PY3_ROUND)");
}

std::string_view round_mode_name(RoundMode mode) {
  switch (mode) {
    case RoundMode::Std:
      return "STD_ROUND";
    case RoundMode::Dpu:
      return "DPU_ROUND";
    case RoundMode::Py3:
      return "PY3_ROUND";
  }
  return "DPU_ROUND";
}

double round_with(RoundMode mode, double x) {
  switch (mode) {
    case RoundMode::Std:
      return round_std(x);
    case RoundMode::Dpu:
      return round_dpu(x);
    case RoundMode::Py3:
      return round_py3(x);
  }
  return round_dpu(x);
}

std::int8_t quantize(double x, int fix_point, RoundMode mode) {
  // NaN has no int8 value; it becomes 0 rather than undefined behaviour. Infinities and
  // large values saturate like any other out-of-range value.
  if (std::isnan(x)) return 0;
  const double r = round_with(mode, std::ldexp(x, fix_point));
  if (r <= -128.0) return -128;
  if (r >= 127.0) return 127;
  return static_cast<std::int8_t>(r);
}

namespace {

// Kernels whose 1/count the DPU replaces by a table value (the quantizer's dpu_utils).
struct TableEntry {
  std::int64_t size;  // square kernel size x size
  std::int64_t multiplier;
  int shift;
};
constexpr TableEntry kAvgPoolTable[] = {
    {3, 7, 6}, {5, 10, 8}, {6, 7, 8}, {7, 21, 10}, {14, 21, 12},
};

}  // namespace

AvgPoolFactor avgpool_factor(std::int64_t kernel_h, std::int64_t kernel_w) {
  if (kernel_h <= 0 || kernel_w <= 0)
    throw Error("avgpool kernel " + std::to_string(kernel_h) + "x" + std::to_string(kernel_w) +
                " is not positive");
  if (kernel_h == kernel_w)
    for (const auto& entry : kAvgPoolTable)
      if (entry.size == kernel_h) return {entry.multiplier, entry.shift};

  const std::int64_t count = kernel_h * kernel_w;
  const auto ucount = static_cast<std::uint64_t>(count);
  if (std::has_single_bit(ucount)) return {1, std::countr_zero(ucount)};

  // Closest N / 2^M to 1/count for M in [0, ceil(log2(count * 128))): N = round(2^M / count)
  // stays below 256, an 8-bit multiplier. The first M reaching the smallest error wins, so
  // the fraction is the one with the fewest bits.
  const int max_shift = static_cast<int>(std::bit_width(ucount * 128 - 1));  // ceil(log2)
  const double target = 1.0 / static_cast<double>(count);
  AvgPoolFactor best{0, 0};
  double best_error = target;  // N = 0 is the worst admissible answer
  for (int m = 0; m < max_shift; ++m) {
    const double scaled = std::ldexp(1.0, m) / static_cast<double>(count);
    const auto n = static_cast<std::int64_t>(std::floor(scaled + 0.5));
    const double error = std::fabs(std::ldexp(static_cast<double>(n), -m) - target);
    if (error < best_error) {
      best = {n, m};
      best_error = error;
    }
  }
  return best;
}

}  // namespace dpushard
