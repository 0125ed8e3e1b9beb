#pragma once
// DPU fixed-point arithmetic (DPUCZDX8G, vai_q defaults), the single source of truth for
// every backend. value = q * 2^-fix_point with q an int8.

#include <cmath>
#include <cstdint>
#include <string_view>

namespace dpushard {

enum class RoundMode { Std, Dpu, Py3 };  // STD_ROUND, DPU_ROUND, PY3_ROUND

RoundMode parse_round_mode(std::string_view name);  // throws dpushard::Error when unknown
std::string_view round_mode_name(RoundMode mode);

// STD_ROUND: half away from zero (-2.5 -> -3).
inline double round_std(double x) { return std::round(x); }
// DPU_ROUND: half toward +infinity (-2.5 -> -2, 2.5 -> 3).
inline double round_dpu(double x) { return std::floor(x + 0.5); }
// PY3_ROUND: half to even.
inline double round_py3(double x) { return std::nearbyint(x); }  // default FE_TONEAREST
double round_with(RoundMode mode, double x);

inline std::int8_t saturate_int8(std::int64_t v) {
  return static_cast<std::int8_t>(v < -128 ? -128 : (v > 127 ? 127 : v));
}

// q = clamp(round(x * 2^fp), -128, 127).
std::int8_t quantize(double x, int fix_point, RoundMode mode);
inline double dequantize(std::int8_t q, int fix_point) { return std::ldexp(double(q), -fix_point); }

// Integer DPU_ROUND of acc / 2^shift for shift >= 0 (half up), and acc * 2^-shift for
// shift < 0. Exact for all int64 inputs the DPU can produce.
inline std::int64_t shift_round_dpu(std::int64_t acc, int shift) {
  if (shift <= 0) return acc * (std::int64_t{1} << (-shift));
  return (acc + (std::int64_t{1} << (shift - 1))) >> shift;  // arithmetic shift = floor
}

// The DPU's average-pool multiplier for a kernel of `count` elements: N / 2^M replacing
// 1/count (3x3 -> 7/64, 5x5 -> 10/256, 6x6 -> 7/256, 7x7 -> 21/1024, 14x14 -> 21/4096,
// powers of two exact, others the closest N/2^M found by search).
struct AvgPoolFactor {
  std::int64_t multiplier;
  int shift;
};
AvgPoolFactor avgpool_factor(std::int64_t kernel_h, std::int64_t kernel_w);

// LeakyReLU with alpha 0.1 on the DPU multiplies negatives by 26/256.
inline constexpr std::int64_t kLeakyNumerator = 26;
inline constexpr int kLeakyShift = 8;

}  // namespace dpushard
