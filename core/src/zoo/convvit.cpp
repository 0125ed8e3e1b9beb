// The ConvViT family: the shared stem and depth bands, and the choice of token mixer.

#include "convvit.hpp"

#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "family.hpp"

namespace dpushard {
namespace zoo {

int convvit_depth(std::int64_t params_per_expert) {
  if (params_per_expert < 2'000'000) return 2;
  if (params_per_expert < 10'000'000) return 4;
  if (params_per_expert < 40'000'000) return 6;
  if (params_per_expert < 120'000'000) return 8;
  return 12;
}

std::int64_t convvit_stem_params(const ZooSpec& spec, std::int64_t dim) {
  return conv_params(3, spec.input[2], kConvVitStem[0]) +
         conv_params(3, kConvVitStem[0], kConvVitStem[1]) +
         conv_params(kPatchKernel, kConvVitStem[1], dim);
}

ConvVitShape solve_convvit_shape(const ZooSpec& spec, const ConvVitCandidate& candidate) {
  constexpr std::int64_t kMaxDim = 4096;
  constexpr std::int64_t kMaxHidden = 16384;
  const auto step_at = [](std::int64_t dim) -> std::int64_t { return dim < 256 ? 32 : 64; };
  ConvVitShape shape;
  shape.blocks = convvit_depth(spec.params / spec.experts);
  std::vector<ShapeCandidate> candidates;
  for (std::int64_t dim = 32; dim <= kMaxDim; dim += step_at(dim))
    for (std::int64_t hidden = 3 * dim; hidden <= 5 * dim && hidden <= kMaxHidden;
         hidden += step_at(dim))
      candidates.push_back(candidate(shape.blocks, dim, hidden));
  const SizeChoice choice = solve_size("convvit", spec.params, candidates);
  shape.dim = choice.widths[0];
  shape.hidden = choice.widths[1];
  shape.tail = choice.tail;
  return shape;
}

Act convvit_blocks(const std::string& prefix, const Act& tokens, int blocks,
                   const ConvVitSublayer& mixer, const ConvVitSublayer& mlp) {
  Act x = tokens;
  for (int i = 0; i < blocks; ++i) {
    const std::string block = prefix + "block" + std::to_string(i);
    x = mixer(block + "/attn", x);
    x = mlp(block + "/mlp", x);
  }
  return x;
}

Act convvit_patch_stem(ModelBuilder& b, const ZooSpec& spec, std::int64_t dim) {
  Act x = b.input("input", {1, spec.input[0], spec.input[1], spec.input[2]}, kInputFixPoint);
  x = b.conv("stem/conv1", x, kConvVitStem[0], 3, 2, 1, /*relu=*/true);
  x = b.conv("stem/conv2", x, kConvVitStem[1], 3, 2, 1, /*relu=*/true);
  return b.conv("stem/patch", x, dim, kPatchKernel, kPatchKernel, 0, /*relu=*/false);
}

}  // namespace zoo

Graph make_convvit(const ZooSpec& spec) {
  return spec.attention == ConvVitAttention::Softmax ? zoo::make_convvit_softmax(spec)
                                                     : zoo::make_convvit_gated(spec);
}

ConvVitAttention parse_convvit_attention(std::string_view text) {
  if (text == "gated") return ConvVitAttention::Gated;
  if (text == "softmax") return ConvVitAttention::Softmax;
  throw Error("unknown attention '" + std::string(text) + "' (expected gated or softmax)");
}

std::string_view convvit_attention_name(ConvVitAttention attention) {
  return attention == ConvVitAttention::Softmax ? "softmax" : "gated";
}

}  // namespace dpushard
