#pragma once
// The chain's requantisation inside oneDNN's own epilogue, used only where it is bit-exact.
// oneDNN 2.x computes dst = s8(RNE(post_ops(scale * (f32(acc) + bias)))). With
//   bias[c] = b_c * 2^(bias_align - acc_align) + 2^-(acc_align + 1)   (the rounding half),
//   scale   = 2^(acc_align - cut),
// every step is exact while |acc + bias| < 2^(23 - acc_align) (24 significant bits), and the
// extra half turns round-half-even into the DPU's round-half-up: a value k + f (f a multiple
// of 2^-cut) plus 2^-(cut+1) rounds to k + 1 exactly when f >= 1/2. Larger sums saturate
// either way when cut <= 15 (2^(23 - cut) > 128; f32 rounding is monotone), and the
// conversion of acc itself is exact by the weight bound (exact_sums.hpp). relu is relu;
// relu6 clips at (relu6_max + 1/2) * 2^-cut. Leaky and float activations, scaling-up shifts
// and split weights keep dpushard's requantizer.

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "../lowering/program.hpp"

namespace dpushard::cpu {

struct FusedEpilogue {
  dnnl::primitive_attr attr;  // output scale and post-ops (scratchpad mode user)
  std::vector<float> bias;    // per output channel, the rounding half included
};

// Null when the fused form would not be bit-exact for this chain.
std::optional<FusedEpilogue> fused_epilogue(const lowering::Chain& chain, int acc_exp,
                                            int acc_align, int bias_align, const QTensor* bias,
                                            std::int64_t channels);

}  // namespace dpushard::cpu
