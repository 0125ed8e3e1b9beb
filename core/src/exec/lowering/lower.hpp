#pragma once
// Lowers an `_int` graph into an execution program, as the DPU compiler does: each fix op
// closes a chain `producer [-> activation] -> fix` that becomes one integer kernel; weights
// (const -> fix) are quantized to int8 once here. Which kernel runs a chain is the
// backend's choice: it hands the lowering a complete KernelSet (ref's kernels, or cpu's
// oneDNN kernels falling back to ref's).

#include <functional>
#include <memory>
#include <vector>

#include "program.hpp"

namespace dpushard::lowering {

using ChainKernelFactory = std::function<std::unique_ptr<Kernel>(const Chain&, const Lowering&)>;

struct KernelSet {
  ChainKernelFactory conv;       // conv2d, depthwise-conv2d
  ChainKernelFactory matmul;     // matmul, inner-product
  ChainKernelFactory add;        // add
  ChainKernelFactory mul;        // mul (also the quantizer's avgpool correction)
  ChainKernelFactory maxpool;    // maxpool2d
  ChainKernelFactory avgpool;    // avgpool2d
  ChainKernelFactory concat;     // concat
  ChainKernelFactory softmax;    // softmax
  ChainKernelFactory layernorm;  // layernorm
  // A standalone activation over a fixed tensor, or a fix over a fixed tensor (a rescale).
  std::function<std::unique_ptr<Kernel>(const Chain&, const Lowering&, SlotId in)> elementwise;
  // reshape, flatten, squeeze, unsqueeze, identity, transpose over a fixed tensor.
  std::function<std::unique_ptr<Kernel>(const Op&, SlotId in, SlotId out, const Lowering&)> layout;
  // stack of fixed tensors with one fix_point.
  std::function<std::unique_ptr<Kernel>(const Op&, const std::vector<SlotId>& in, SlotId out,
                                        const Lowering&)>
      stack;
};

// Throws dpushard::Error naming the op no kernel of `kernels` can run.
Program lower_graph(const Graph& graph, const KernelSet& kernels);

}  // namespace dpushard::lowering
