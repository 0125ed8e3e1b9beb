// The ConvViT with gated attention (`zoo convvit`, the default): a transformer restructured
// for the KV260's DPU (docs/zoo.md, "The DPU-friendly ConvViT"). Tokens stay a grid
// [1, H/16, W/16, D]; each block is a token mixer and an MLP, both residual, built only
// from ops the DPUCZDX8G runs:
//   token mixer: gate = hard-sigmoid(1x1 conv), key = 1x1 conv, value = 1x1 conv then a
//     depthwise 3x3 (local mixing); context = mean over all tokens of gate x key, a
//     [1, 1, 1, D] summary (additive attention, with the softmax over tokens replaced by a
//     hard-sigmoid gate and the weighted sum by a mean); out = 1x1 conv of value x context
//     (a per-channel scale, as in a squeeze-excitation block).
//   MLP: 1x1 conv to the hidden width with hard-swish (instead of GELU), 1x1 conv back.
// Layernorm gives way to batch norm folded into the first convs of each sub-block: with
// random weights a folded norm is only a scale, a power of two on those weights that
// brings the sub-block's input to unit rms. The mean over tokens is average pooling in
// windows of at most 8x8 (the DPU's pooling limit), staged when the grid is larger.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "convvit.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "family.hpp"
#include "model_builder.hpp"
#include "moments.hpp"
#include "size_solver.hpp"

namespace dpushard::zoo {
namespace {

constexpr std::int64_t kGatedMlpRatio = 4;
constexpr std::int64_t kLocalKernel = 3;    // the value path's depthwise conv
constexpr std::int64_t kMaxPoolWindow = 8;  // DPUCZDX8G pooling kernels: 1 to 8, square

// Parameters of one block: gate, key, value and projection 1x1 convs (D^2 + D each), the
// depthwise 3x3 (9 D + D), fc1 (D Hd + Hd) and fc2 (Hd D + D).
std::int64_t gated_block_params(std::int64_t dim, std::int64_t hidden) {
  return 4 * (dim * dim + dim) + (kLocalKernel * kLocalKernel + 1) * dim + 2 * dim * hidden +
         hidden + dim;
}

ShapeCandidate gated_candidate(const ZooSpec& spec, int blocks, std::int64_t dim,
                               std::int64_t hidden) {
  const std::int64_t joined = joined_channels(spec, dim);
  ShapeCandidate c;
  c.widths = {dim, hidden};
  c.base = convvit_stem_params(spec, dim) +
           spec.experts * blocks * gated_block_params(dim, hidden) + spec.classes;
  c.slope = joined + 1 + spec.classes;  // pre-logits weights + bias, classifier row
  c.tail_nominal = std::max<std::int64_t>(64, dim);
  c.misfit =
      std::abs(std::log(static_cast<double>(hidden) / static_cast<double>(kGatedMlpRatio * dim)));
  return c;
}

// Pooling windows whose product is `side`, each at most 8 (largest first); empty when a
// prime factor above 7 makes that impossible.
std::vector<std::int64_t> pool_windows(std::int64_t side) {
  std::vector<std::int64_t> windows;
  while (side > 1) {
    std::int64_t k = std::min(side, kMaxPoolWindow);
    while (k > 1 && side % k != 0) --k;
    if (k == 1) return {};
    windows.push_back(k);
    side /= k;
  }
  return windows;
}

// Mean over the token grid -> [1, 1, 1, C]: square pooling windows of at most 8 where the
// grid allows it (14x14: 7x7 then 2x2), else one global pool, which the DPU cannot run
// (a non-square grid, or a side with a prime factor above 7).
Act token_mean(ModelBuilder& b, const std::string& name, const Act& x) {
  const std::int64_t height = x.value.shape.at(1);
  const std::int64_t width = x.value.shape.at(2);
  if (height == 1 && width == 1) return x;
  const std::vector<std::int64_t> windows = pool_windows(height);
  if (height != width || windows.empty()) return b.global_avgpool(name, x);
  Act y = x;
  for (std::size_t i = 0; i < windows.size(); ++i)
    y = b.avgpool(windows.size() == 1 ? name : name + std::to_string(i + 1), y, windows[i]);
  return y;
}

// The power of two a folded batch norm scales the next weights by: brings rms(x) to ~1.
int folded_norm_shift(const Act& x) {
  const double m2 = x.moments.m2();
  return m2 > 0.0 ? static_cast<int>(std::lround(0.5 * std::log2(m2))) : 0;
}

Act gated_attention(ModelBuilder& b, const std::string& name, const Act& x) {
  const std::int64_t dim = x.value.shape.back();
  const int norm = folded_norm_shift(x);
  const Act gate = b.conv(name + "/gate", x, dim, 1, 1, 0, Nonlinear::HardSigmoid, norm);
  const Act key = b.conv(name + "/key", x, dim, 1, 1, 0, Nonlinear::None, norm);
  Act value = b.conv(name + "/value", x, dim, 1, 1, 0, Nonlinear::None, norm);
  value = b.depthwise(name + "/local", value, kLocalKernel);
  const Act context = token_mean(b, name + "/context", b.mul(name + "/weighted", gate, key));
  const Act mixed = b.mul(name + "/mix", value, context);
  const Act projected =
      b.conv(name + "/proj", mixed, dim, 1, 1, 0, Nonlinear::None, folded_norm_shift(mixed));
  return b.add(name + "/residual", {x, projected}, /*relu=*/false);
}

Act gated_mlp(ModelBuilder& b, const std::string& name, const Act& x, std::int64_t hidden) {
  const std::int64_t dim = x.value.shape.back();
  Act h = b.conv(name + "/fc1", x, hidden, 1, 1, 0, Nonlinear::HardSwish, folded_norm_shift(x));
  h = b.conv(name + "/fc2", h, dim, 1, 1, 0, Nonlinear::None);
  return b.add(name + "/residual", {x, h}, /*relu=*/false);
}

}  // namespace

Graph make_convvit_gated(const ZooSpec& spec) {
  check_spec(spec, "convvit");
  const ConvVitShape plan =
      solve_convvit_shape(spec, [&spec](int blocks, std::int64_t dim, std::int64_t hidden) {
        return gated_candidate(spec, blocks, dim, hidden);
      });

  ModelBuilder b("zoo_convvit", spec.seed, spec.weights);
  const Act tokens = convvit_patch_stem(b, spec, plan.dim);
  std::vector<Act> experts;
  for (int e = 0; e < spec.experts; ++e)
    experts.push_back(convvit_blocks(
        expert_prefix(e), tokens, plan.blocks,
        [&b](const std::string& name, const Act& x) { return gated_attention(b, name, x); },
        [&b, &plan](const std::string& name, const Act& x) {
          return gated_mlp(b, name, x, plan.hidden);
        }));
  Act x = join_experts(b, experts, spec.join, /*channel_axis=*/3);

  x = token_mean(b, "tail/pool", x);
  x = b.reshape("tail/flatten", x, {1, x.value.shape.back()});
  x = b.linear("tail/prelogits", x, plan.tail, /*relu=*/true, folded_norm_shift(x));
  b.linear("classifier", x, spec.classes, /*relu=*/false);
  return b.finish();
}

}  // namespace dpushard::zoo
