#pragma once
// What the two ConvViT variants share (docs/zoo.md): the convolutional patch stem and the
// depth bands. Each variant lives in its own file: convvit_gated.cpp (the DPU-friendly
// default) and convvit_softmax.cpp (softmax attention, layernorm and GELU on the A53).

#include <cstdint>

#include "dpushard/graph.hpp"
#include "dpushard/zoo.hpp"
#include "model_builder.hpp"

namespace dpushard::zoo {

// The stem: conv3x3/2 + ReLU to 32, conv3x3/2 + ReLU to 64, then a 4x4 stride-4 patch
// conv to the token width: 16x16 patches.
inline constexpr std::int64_t kConvVitStem[2] = {32, 64};
inline constexpr std::int64_t kPatchKernel = 4;

// Blocks per expert: deeper experts for bigger per-expert budgets.
int convvit_depth(std::int64_t params_per_expert);

// Parameters of the stem for a token width `dim`.
std::int64_t convvit_stem_params(const ZooSpec& spec, std::int64_t dim);

// The stem's output: a token grid [1, H/16, W/16, dim] (the patch conv's fixed output).
Act convvit_patch_stem(ModelBuilder& builder, const ZooSpec& spec, std::int64_t dim);

Graph make_convvit_gated(const ZooSpec& spec);
Graph make_convvit_softmax(const ZooSpec& spec);

}  // namespace dpushard::zoo
