#pragma once
// When oneDNN's int8 sums are exact. Its kernels accumulate s8 x s8 products in s32 (with
// VNNI; without it s8 weights are halved), but hand the s32 sum back through f32 on the way
// to an s32 destination, so a sum is exact only while |sum| <= 2^24. A per-channel bound
// from the constant weights decides at load: 128 * sum|w| <= 2^24 means no input can reach
// past it. Weights that fail it are split into two base-16 digits (|digit| <= 8), each
// summed exactly, recombined as lo + 16 * hi in integer arithmetic.

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace dpushard::cpu {

inline constexpr std::int64_t kExactF32Sum = std::int64_t{1} << 24;
inline constexpr int kDigitShift = 4;  // sum = lo + (hi << kDigitShift)

// True when this CPU gives exact int8 sums at all (VNNI) and K products cannot overflow
// s32 inside the kernel.
bool exact_int8_sums(std::int64_t k);

// 128 * sum over the weights of one output channel of |w| <= 2^24 for every channel;
// `channel_of(i)` maps a weight's index to its output channel in [0, channels).
bool weight_sums_exact(std::span<const std::int8_t> weights, std::int64_t channels,
                       const std::function<std::int64_t(std::size_t)>& channel_of);

// Products of two activations (no constant to bound): 128 * 128 * k <= 2^24.
inline bool activation_sums_exact(std::int64_t k) { return k * 128 * 128 <= kExactF32Sum; }

// w = lo + 16 * hi with lo in [-8, 7] and hi in [-8, 8].
struct Digits {
  std::vector<std::int8_t> lo, hi;
};
Digits split_digits(std::span<const std::int8_t> weights);

}  // namespace dpushard::cpu
