#pragma once
// The cpu backend's kernels: oneDNN computes the exact int32 sums (s8 x s8 -> s32, NHWC,
// weights reordered once at load) and dpushard's requantisation finishes each chain with
// the ref backend's arithmetic (bias alignment, nonlinear, DPU_ROUND, saturation).

#include <memory>

#include "../lowering/program.hpp"

namespace dpushard::cpu {

// conv2d / depthwise-conv2d; null when the chain is left to the ref kernel (weights that
// are not constants, sums that oneDNN cannot return exactly, a CPU without VNNI, a geometry
// oneDNN does not implement).
std::unique_ptr<lowering::Kernel> make_dnnl_conv(const lowering::Chain& chain,
                                                 const lowering::Lowering& lowering);
// matmul / inner-product; null under the same conditions (activation x activation matmuls
// run on oneDNN too while K <= 1024, without a weight reorder).
std::unique_ptr<lowering::Kernel> make_dnnl_matmul(const lowering::Chain& chain,
                                                   const lowering::Lowering& lowering);

// add without broadcasting and maxpool2d, vectorised (eltwise_kernels.cpp); null leaves a
// chain to the ref kernel.
std::unique_ptr<lowering::Kernel> make_fast_add(const lowering::Chain& chain,
                                                const lowering::Lowering& lowering);
std::unique_ptr<lowering::Kernel> make_fast_maxpool(const lowering::Chain& chain,
                                                    const lowering::Lowering& lowering);

}  // namespace dpushard::cpu
