#pragma once
// Parametric model families with the stem / experts / tail shape, generated as `_int`
// graphs with seeded int8 weights: a stem, K independent expert branches, a join
// (concat or sum) and a tail with a classifier.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

enum class ZooJoin { Concat, Sum };

// The ConvViT's token mixer (docs/zoo.md).
// Gated: gated global-context attention built only from ops the KV260's DPU runs (1x1 and
//   depthwise convs, hard-sigmoid, elementwise and per-channel multiplies, pooling), with
//   hard-swish MLPs and no layernorm: the transformer as one would restructure it for the DPU.
// Softmax: multi-head scaled dot-product attention with layernorm and GELU, whose
//   activation products, softmax, GELU and layernorm run on the board's Cortex-A53.
enum class ConvVitAttention { Gated, Softmax };

struct ZooSpec {
  std::int64_t params = 10'000'000;                // target parameter count, met within 5 %
  int experts = 3;                                 // independent branches (>= 1)
  std::array<std::int64_t, 3> input{224, 224, 3};  // H, W, C
  std::uint64_t seed = 1;
  ZooJoin join = ZooJoin::Concat;
  int classes = 1000;
  // false: const ops carry shapes and fix points but no values, and the graph is marked
  // weights_omitted (dpushard/graph/graph.hpp): a model of any size to split and predict, never
  // run.
  bool weights = true;
  ConvVitAttention attention = ConvVitAttention::Gated;  // ConvViT only
};

// CNN: conv stem, experts as residual conv stacks, join, tail conv + pool + classifier.
Graph make_cnn(const ZooSpec& spec);
// ConvViT: convolutional patch stem, experts as transformer blocks (a token mixer and an
// MLP, each residual), join, tail with pooling and classifier; spec.attention picks the
// token mixer.
Graph make_convvit(const ZooSpec& spec);

// "gated" / "softmax" <-> ConvVitAttention; throws dpushard::Error on other text.
ConvVitAttention parse_convvit_attention(std::string_view text);
std::string_view convvit_attention_name(ConvVitAttention attention);

// "100M", "2.5M", "750K", "1G", "12345" -> count; throws dpushard::Error on bad text.
std::int64_t parse_count(std::string_view text);
// "224x224x3" -> {224, 224, 3}.
std::array<std::int64_t, 3> parse_input_shape(std::string_view text);

}  // namespace dpushard
