#pragma once
// The sliding window of a conv, depthwise conv or pool op, decoded from its XIR attributes
// in one place. Every module that needs a window (shape inference, the ref and cpu kernels,
// the quantizer, the timing model, the compiler oracle) reads it through window_of().
//
// The defaults are XIR's own (built_in_ops.cpp of Vitis AI 3.5: conv2d, depthwise-conv2d,
// maxpool2d, avgpool2d): `kernel` and `stride` are required, in the order {width, height};
// `dilation` is optional, {1, 1}; `pad` is optional, {left, right, top, bottom} = 0;
// `global` is optional, false. `pad_mode` is required by XIR; a file without one is read as
// FLOOR, PyTorch's convention, which is what every pool and conv dpushard writes uses.

#include <cstdint>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

struct Window {
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t stride_h = 0, stride_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t pad_left = 0, pad_right = 0, pad_top = 0, pad_bottom = 0;
  std::string pad_mode = "FLOOR";  // FLOOR, CEIL, SAME or VALID
  // A global pool: its window is its whole input, see over().
  bool global = false;

  // This window on an input of in_h x in_w: a global pool's kernel and stride become the
  // input's extent (and its pad 0); any other window is returned as it is.
  Window over(std::int64_t in_h, std::int64_t in_w) const;
};

// Decodes and checks op's window. Throws dpushard::Error "op 'NAME' (TYPE): ..." naming the
// attribute when one is missing (kernel or stride of a window that is not global), has the
// wrong number of values, or is out of range (kernel, stride, dilation < 1; pad < 0; an
// unknown pad_mode).
Window window_of(const Op& op);

}  // namespace dpushard
