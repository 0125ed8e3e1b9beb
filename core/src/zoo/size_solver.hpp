#pragma once
// Picks a family's widths and tail width so that its parameter count meets a target.
//
// A family fixes its depth from the target (size bands) and lists candidate shapes: width
// combinations on a grid of multiples of 16 (the DPU computes 16 channels at a time), each
// with its parameter count as base + tail * slope, linear in the tail width. The solver
// solves the tail of every candidate and, among those within 0.5 % of the target, keeps
// the best-shaped one: widths closest to the family's ideal ratios and tail closest to
// its nominal width (log distances). Two width knobs on a grid give parameter counts
// dense enough that the tail stays near its nominal width.

#include <cstdint>
#include <string>
#include <vector>

namespace dpushard::zoo {

struct ShapeCandidate {
  std::vector<std::int64_t> widths;  // family-specific, e.g. {stage-1, stage-2 width}
  std::int64_t base = 0;             // parameters with a zero-width tail
  std::int64_t slope = 0;            // parameters per tail channel
  std::int64_t tail_nominal = 0;     // the tail width a well-shaped model would have
  double misfit = 0.0;               // log distance of `widths` from the ideal ratios
};

struct SizeChoice {
  std::vector<std::int64_t> widths;
  std::int64_t tail = 0;
  std::int64_t params = 0;
};

// Throws dpushard::Error (prefixed by `family`) when no candidate reaches the target
// within 5 %.
SizeChoice solve_size(const std::string& family, std::int64_t target,
                      const std::vector<ShapeCandidate>& candidates);

inline constexpr std::int64_t kMinTail = 16;

// Parameters of a kernel x kernel convolution from `in` to `out` channels, with its bias.
inline constexpr std::int64_t conv_params(std::int64_t kernel, std::int64_t in, std::int64_t out) {
  return kernel * kernel * in * out + out;
}

}  // namespace dpushard::zoo
