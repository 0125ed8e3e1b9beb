#pragma once
// Parametric model families with the stem / experts / tail shape, generated as `_int`
// graphs with seeded int8 weights: a stem, K independent expert branches, a join
// (concat or sum) and a tail with a classifier.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "dpushard/graph.hpp"

namespace dpushard {

enum class ZooJoin { Concat, Sum };

struct ZooSpec {
  std::int64_t params = 10'000'000;                // target parameter count, met within 5 %
  int experts = 3;                                 // independent branches (>= 1)
  std::array<std::int64_t, 3> input{224, 224, 3};  // H, W, C
  std::uint64_t seed = 1;
  ZooJoin join = ZooJoin::Concat;
  int classes = 1000;
  // false: const ops carry shapes and fix points but no values, and the graph is marked
  // weights_omitted (dpushard/graph.hpp): a model of any size to split and predict, never run.
  bool weights = true;
};

// CNN: conv stem, experts as residual conv stacks, join, tail conv + pool + classifier.
Graph make_cnn(const ZooSpec& spec);
// ConvViT: convolutional patch stem, experts as transformer blocks (attention + MLP),
// join, tail with layernorm, pooling and classifier.
Graph make_convvit(const ZooSpec& spec);

// "100M", "2.5M", "750K", "1G", "12345" -> count; throws dpushard::Error on bad text.
std::int64_t parse_count(std::string_view text);
// "224x224x3" -> {224, 224, 3}.
std::array<std::int64_t, 3> parse_input_shape(std::string_view text);

}  // namespace dpushard
