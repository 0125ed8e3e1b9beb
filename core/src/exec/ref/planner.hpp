#pragma once
// Lowers an `_int` graph into the ref backend's plan, as the DPU compiler does: each fix op
// closes a chain `producer [-> activation] -> fix` that becomes one integer kernel; weights
// (const -> fix) are quantized to int8 once here.

#include <functional>

#include "plan.hpp"

namespace dpushard::ref {

// Lets another backend (cpu) reuse this lowering with its own kernels for some chains: a
// factory returning null keeps the ref kernel for that chain.
using KernelFactory = std::function<std::unique_ptr<Kernel>(const Chain&, const Lowering&)>;
struct KernelOverrides {
  KernelFactory conv;     // conv2d, depthwise-conv2d
  KernelFactory matmul;   // matmul, inner-product
  KernelFactory add;      // add
  KernelFactory maxpool;  // maxpool2d
};

// Throws dpushard::Error naming the op the ref backend cannot run.
Plan lower_graph(const Graph& graph, const KernelOverrides& overrides = {});

}  // namespace dpushard::ref
