#pragma once
// The reference kernels: the DPU's integer arithmetic in plain loops (docs/numerics.md),
// one factory per op family. Each validates its chain (shapes, attributes, shift ranges)
// and throws dpushard::Error naming the op, so every problem shows at load.

#include <memory>
#include <vector>

#include "../lowering/epilogue.hpp"
#include "../lowering/lower.hpp"
#include "../lowering/program.hpp"

namespace dpushard::ref {

// The reference kernels are written in the lowering's vocabulary.
using lowering::Activation;
using lowering::activation_of;
using lowering::apply_activation;
using lowering::Chain;
using lowering::Epilogue;
using lowering::fail;
using lowering::Kernel;
using lowering::Lowering;
using lowering::requantize_dpu;
using lowering::SlotId;
using lowering::Slots;

// Every factory below, as the complete set lower_graph() takes.
lowering::KernelSet kernel_set();

// conv2d, depthwise-conv2d (conv_kernel.cpp).
std::unique_ptr<Kernel> make_conv(const Chain& chain, const Lowering& lowering);
// matmul, inner-product (matmul_kernel.cpp).
std::unique_ptr<Kernel> make_matmul(const Chain& chain, const Lowering& lowering);
// add; mul of two fixed tensors, of a fixed tensor and a float const, or the quantizer's
// avgpool2d -> mul(const) correction (eltwise_kernel.cpp, pool_kernel.cpp).
std::unique_ptr<Kernel> make_add(const Chain& chain, const Lowering& lowering);
std::unique_ptr<Kernel> make_mul(const Chain& chain, const Lowering& lowering);
// maxpool2d, avgpool2d (pool_kernel.cpp). `pool` is chain.producer, or the avgpool under a
// correction mul whose float constant is `scale`.
std::unique_ptr<Kernel> make_maxpool(const Chain& chain, const Lowering& lowering);
std::unique_ptr<Kernel> make_avgpool(const Chain& chain, const Lowering& lowering, const Op& pool,
                                     const float* scale);
// concat (layout_kernel.cpp).
std::unique_ptr<Kernel> make_concat(const Chain& chain, const Lowering& lowering);
// Layout ops over a fixed tensor: reshape, flatten, squeeze, identity (a copy), transpose.
std::unique_ptr<Kernel> make_layout(const Op& op, SlotId in, SlotId out, const Lowering& lowering);
// stack of fixed tensors with one fix_point (a new axis), as a copy.
std::unique_ptr<Kernel> make_stack(const Op& op, const std::vector<SlotId>& inputs, SlotId out,
                                   const Lowering& lowering);
// Elementwise: a standalone activation over a fixed tensor (chain.producer is the
// activation), or a fix over an already fixed tensor (chain.producer is the fix)
// (activation_kernel.cpp).
std::unique_ptr<Kernel> make_elementwise(const Chain& chain, const Lowering& lowering, SlotId in);
// Float ops over fixed tensors: softmax, layernorm (float_kernel.cpp).
std::unique_ptr<Kernel> make_softmax(const Chain& chain, const Lowering& lowering);
std::unique_ptr<Kernel> make_layernorm(const Chain& chain, const Lowering& lowering);

}  // namespace dpushard::ref
