// The two ConvViT variants (docs/zoo.md): the gated one, built for the KV260's DPU, meets
// every size from 1M to 200M and runs at least 86 % of its engine time on the DPU in few
// subgraphs, with every op known to the compiler oracle; the softmax one is the model it
// always was (pinned by its file's digest) and leaves most of its time to the A53.

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/cost.hpp"
#include "dpushard/perf/dpu_rules.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"

namespace dpushard {
namespace {

// sha256 of `dpushard zoo convvit --params 1M --experts 2 --input 64x64x3` before the gated
// variant existed (eb4e08f), where ConvViT meant softmax attention.
constexpr const char* kSoftmaxConvVitDigest =
    "d78ea8a8678ac96f620004d882244f14f9c65061258426e9f8f4fef56af9320f";

ZooSpec spec_of(std::int64_t params, ConvVitAttention attention, bool weights = true) {
  ZooSpec spec;
  spec.params = params;
  spec.attention = attention;
  spec.weights = weights;
  return spec;
}

int blocks_of(const Graph& g) {
  std::set<std::string> blocks;
  for (const Op& op : g.ops())
    if (op.name.starts_with("expert")) blocks.insert(block_of(op.name));
  return static_cast<int>(blocks.size());
}

TEST(ConvVitGated, MeetsEverySizeFromOneMillionToTwoHundredMillion) {
  for (const std::int64_t target : {1'000'000, 2'000'000, 5'000'000, 10'000'000, 20'000'000,
                                    50'000'000, 100'000'000, 200'000'000}) {
    const Graph gated = make_convvit(spec_of(target, ConvVitAttention::Gated, false));
    const GraphCost cost = graph_cost(gated);
    EXPECT_LE(std::abs(static_cast<double>(cost.params - target)) / static_cast<double>(target),
              0.01)
        << target << ": " << cost.params;
    // Weights applied at the 196 tokens of a 224x224 input, as the softmax variant's.
    const double per_param = static_cast<double>(cost.macs) / static_cast<double>(cost.params);
    EXPECT_GT(per_param, 150.0) << target;
    EXPECT_LT(per_param, 260.0) << target;
  }
}

// At least 86 % of the engine time on the DPU at 1M, 20M and 200M; all of it in one DPU
// subgraph here, at least two fewer than the model has blocks.
TEST(ConvVitGated, RunsOnTheDpuInFewSubgraphs) {
  const Target kv260 = resolve_target("kv260");
  for (const std::int64_t target : {1'000'000, 20'000'000, 200'000'000}) {
    const Graph gated = make_convvit(spec_of(target, ConvVitAttention::Gated, false));
    const Prediction p = predict(gated, kv260);
    SCOPED_TRACE(target);
    EXPECT_GE(p.dpu_share, 0.86);
    EXPECT_EQ(p.cpu_subgraphs, 0);
    EXPECT_LE(p.dpu_subgraphs, blocks_of(gated) - 2);
    for (const OpTiming& t : p.ops)
      EXPECT_EQ(t.engine, Device::Dpu) << t.op << ": " << t.cpu_reason;
  }
}

TEST(ConvVitGated, EveryOpIsOneTheOracleKnowsForTheDpu) {
  const DpuRules& rules = builtin_dpu_rules();
  const Graph gated = make_convvit(spec_of(2'000'000, ConvVitAttention::Gated, false));
  std::set<std::string> types;
  for (const Op& op : gated.ops())
    if (op.type != "data" && op.type != "const" && op.type != "fix") types.insert(op.type);
  EXPECT_EQ(types, (std::set<std::string>{"conv2d", "depthwise-conv2d", "hard-sigmoid",
                                          "hard-swish", "mul", "add", "avgpool2d", "concat",
                                          "reshape", "matmul", "relu"}));
  for (const std::string& type : types) {
    const auto rule = rules.ops.find(type);
    ASSERT_NE(rule, rules.ops.end()) << type << " is not in the oracle";
    EXPECT_EQ(rule->second.device, Device::Dpu) << type;
  }
}

// The mean over tokens uses pooling windows the DPU has (at most 8x8, square): 14x14 in two
// stages, 7x7 in one; a grid it cannot tile falls back to one global pool.
TEST(ConvVitGated, PoolsTheTokenGridInWindowsTheDpuRuns) {
  ZooSpec spec = spec_of(1'000'000, ConvVitAttention::Gated, false);
  const Graph at224 = make_convvit(spec);
  EXPECT_EQ(ints_attr(at224.op("tail/pool1").attrs, "kernel", "pool1"),
            (std::vector<std::int64_t>{7, 7}));
  EXPECT_EQ(ints_attr(at224.op("tail/pool2").attrs, "kernel", "pool2"),
            (std::vector<std::int64_t>{2, 2}));
  const std::int64_t joined = 3 * at224.op("stem/patch_fix").output.shape[3];
  EXPECT_EQ(at224.op("tail/pool2_fix").output.shape, (std::vector<std::int64_t>{1, 1, 1, joined}));

  spec.input = {112, 112, 3};
  const Graph at112 = make_convvit(spec);
  EXPECT_EQ(ints_attr(at112.op("tail/pool").attrs, "kernel", "pool"),
            (std::vector<std::int64_t>{7, 7}));

  spec.input = {64, 96, 3};  // a 4x6 grid: no square window covers it
  const Graph odd = make_convvit(spec);
  EXPECT_TRUE(bool_attr(odd.op("tail/pool").attrs, "global", false));
}

// The softmax variant is byte for byte the ConvViT of before the gated one (digest of the
// file written by `dpushard zoo convvit --params 1M --experts 2 --input 64x64x3` at eb4e08f).
TEST(ConvVitSoftmax, IsTheModelItAlwaysWas) {
  ZooSpec spec = spec_of(1'000'000, ConvVitAttention::Softmax);
  spec.experts = 2;
  spec.input = {64, 64, 3};
  const std::string bytes = serialize_xmodel(make_convvit(spec));
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  EXPECT_EQ(to_hex(sha256({data, bytes.size()})), kSoftmaxConvVitDigest);
}

// Where the A53 work sits: none in the gated model's blocks; most of each softmax block.
TEST(ConvVitVariants, PredictShowsTheCpuTimePerBlock) {
  const Target kv260 = resolve_target("kv260");
  const Prediction gated =
      predict(make_convvit(spec_of(20'000'000, ConvVitAttention::Gated, false)), kv260);
  const Prediction softmax =
      predict(make_convvit(spec_of(20'000'000, ConvVitAttention::Softmax, false)), kv260);
  int gated_blocks = 0;
  for (const BlockTiming& b : time_per_block(gated)) {
    EXPECT_EQ(b.cpu_ms, 0.0) << b.block;
    gated_blocks += b.block.find("/block") != std::string::npos;
  }
  int softmax_blocks = 0;
  for (const BlockTiming& b : time_per_block(softmax)) {
    if (b.block.find("/block") == std::string::npos) continue;
    ++softmax_blocks;
    EXPECT_GT(b.cpu_ms, b.dpu_ms) << b.block;
  }
  EXPECT_EQ(gated_blocks, softmax_blocks);
  EXPECT_GT(gated_blocks, 3);
  EXPECT_LT(softmax.dpu_share, 0.3);
  EXPECT_GT(softmax.cpu_subgraphs, 10);
}

TEST(ConvVitVariants, BlockOfGroupsOpsByTheirBlock) {
  EXPECT_EQ(block_of("expert0/block1/attn/gate"), "expert0/block1");
  EXPECT_EQ(block_of("expert12/block3"), "expert12/block3");
  EXPECT_EQ(block_of("stem/conv1_fix"), "stem");
  EXPECT_EQ(block_of("classifier"), "classifier");
  EXPECT_EQ(block_of("/layer1/layer1.0/conv1/Conv"), "layer1");
  EXPECT_EQ(block_of("blocky/blockade/x"), "blocky");
}

TEST(ConvVitVariants, AttentionNamesRoundTrip) {
  EXPECT_EQ(parse_convvit_attention("gated"), ConvVitAttention::Gated);
  EXPECT_EQ(parse_convvit_attention("softmax"), ConvVitAttention::Softmax);
  EXPECT_EQ(convvit_attention_name(ConvVitAttention::Softmax), "softmax");
  EXPECT_THROW(parse_convvit_attention("linear"), Error);
}

}  // namespace
}  // namespace dpushard
