#pragma once
// What the two ConvViT variants share (docs/zoo.md): the convolutional patch stem and the
// depth bands. Each variant lives in its own file: convvit_gated.cpp (the DPU-friendly
// default) and convvit_softmax.cpp (softmax attention, layernorm and GELU on the A53).

#include <cstdint>
#include <functional>
#include <string>

#include "dpushard/graph/graph.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "model_builder.hpp"
#include "size_solver.hpp"

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

// Width and depth of one expert: token width D, MLP hidden width Hd, tail width T.
struct ConvVitShape {
  int blocks = 2;
  std::int64_t dim = 0;
  std::int64_t hidden = 0;
  std::int64_t tail = 0;
};

// Parameters of a model of `blocks` blocks per expert at widths (dim, hidden), as the size
// solver takes them (base + tail x slope).
using ConvVitCandidate =
    std::function<ShapeCandidate(int blocks, std::int64_t dim, std::int64_t hidden)>;

// Solves the shape for spec.params on the width grid both variants share: D a multiple of
// 32 below 256 and of 64 from there on (the head size), up to 4096; Hd from 3 D to 5 D in
// those steps, up to 16384; depth from convvit_depth.
ConvVitShape solve_convvit_shape(const ZooSpec& spec, const ConvVitCandidate& candidate);

// `blocks` blocks of a token mixer then an MLP, named <prefix>block<i>/attn and /mlp.
using ConvVitSublayer = std::function<Act(const std::string& name, const Act& x)>;
Act convvit_blocks(const std::string& prefix, const Act& tokens, int blocks,
                   const ConvVitSublayer& mixer, const ConvVitSublayer& mlp);

Graph make_convvit_gated(const ZooSpec& spec);
Graph make_convvit_softmax(const ZooSpec& spec);

}  // namespace dpushard::zoo
