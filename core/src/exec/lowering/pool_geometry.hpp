#pragma once
// The geometry of a maxpool2d or avgpool2d chain over NHWC int8 tensors: its window (from
// the one window decoder, dpushard/graph/window.hpp) placed on the input and checked against the
// output's shape. Every backend's pool kernel reads it from here, so all of them accept
// and refuse the same pools with the same one-line errors.

#include <cstdint>

#include "program.hpp"

namespace dpushard::lowering {

struct PoolGeometry {
  std::int64_t batch = 0, in_h = 0, in_w = 0, channels = 0, out_h = 0, out_w = 0;
  std::int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0;
  bool padded = false;
};

// Throws dpushard::Error naming `pool` when the tensors are not NHWC or the output does not
// fit the window placed on the input.
PoolGeometry pool_geometry(const Op& pool, const QTensor& x, const QTensor& y);

}  // namespace dpushard::lowering
