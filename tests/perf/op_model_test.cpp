// Per-op cycles on hand-worked shapes (B4096: 8 pixels x 16 ic x 16 oc per cycle), the
// compute/memory bound, and where ops go when the DPU cannot run them.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/builder.hpp"
#include "dpushard/perf/perf.hpp"

namespace dpushard {
namespace {

Target kv260() {
  Target t = builtin_target("kv260");
  t.compute_efficiency = 0.5;  // round numbers for hand-worked times
  return t;
}

std::vector<std::int8_t> ones(std::int64_t n) {
  return std::vector<std::int8_t>(static_cast<std::size_t>(n), 1);
}

struct ConvCase {
  std::int64_t h = 8, w = 8, ic = 16, oc = 16, k = 1, stride = 1, group = 1;
  bool depthwise = false;
};

// input [1,h,w,ic] -> one conv -> fix.
Graph one_conv(const ConvCase& c) {
  GraphBuilder b("conv");
  const Value x = b.input("x", {1, c.h, c.w, c.ic}, 6);
  Conv2dSpec spec;
  spec.kernel = {c.k, c.k};
  spec.stride = {c.stride, c.stride};
  const std::int64_t pad = c.k / 2;
  spec.pad = {pad, pad, pad, pad};
  spec.group = c.group;
  if (c.depthwise) {
    const Value wt = b.constant("w", {1, c.k, c.k, c.ic}, ones(c.k * c.k * c.ic), 7);
    b.depthwise_conv2d("conv", x, wt, std::nullopt, spec, 5);
  } else {
    const Value wt = b.constant("w", {c.oc, c.k, c.k, c.ic / c.group},
                                ones(c.oc * c.k * c.k * c.ic / c.group), 7);
    b.conv2d("conv", x, wt, std::nullopt, spec, 5);
  }
  return b.finish();
}

const OpTiming& only_op(const Prediction& p) {
  EXPECT_EQ(p.ops.size(), 1u);
  return p.ops.front();
}

std::int64_t conv_cycles(const ConvCase& c, const Target& t = kv260()) {
  return only_op(predict(one_conv(c), t)).cycles;
}

TEST(OpCycles, PlainConvIsChannelsTimesPixelsTimesTaps) {
  // ceil(16/16) * ceil(16/16) * ceil(8/8) * 8 rows * 1 * 1
  EXPECT_EQ(conv_cycles({}), 8);
  // 3x3, ic 32, oc 48, 16x16: ceil(48/16)=3 * ceil(32/16)=2 * ceil(16/8)=2 * 16 * 9
  EXPECT_EQ(conv_cycles({.h = 16, .w = 16, .ic = 32, .oc = 48, .k = 3}), 3 * 2 * 2 * 16 * 9);
}

TEST(OpCycles, ChannelsPadToTheParallelism) {
  const std::int64_t base = conv_cycles({.ic = 16, .oc = 16});
  EXPECT_EQ(conv_cycles({.ic = 3, .oc = 16}), base);       // ic 3 costs like 16
  EXPECT_EQ(conv_cycles({.ic = 17, .oc = 16}), 2 * base);  // ic 17 like 32
  EXPECT_EQ(conv_cycles({.ic = 16, .oc = 17}), 2 * base);  // oc 17 like 32
  EXPECT_EQ(conv_cycles({.ic = 16, .oc = 32}), 2 * base);
}

TEST(OpCycles, PixelsPadAlongTheWidth) {
  const std::int64_t base = conv_cycles({.h = 8, .w = 8});
  EXPECT_EQ(conv_cycles({.h = 8, .w = 9}), 2 * base);  // 9 pixels like 16
  EXPECT_EQ(conv_cycles({.h = 8, .w = 16}), 2 * base);
  EXPECT_EQ(conv_cycles({.h = 8, .w = 1}), base);          // 1 pixel like 8
  EXPECT_EQ(conv_cycles({.h = 9, .w = 8}), base * 9 / 8);  // rows are not padded
}

TEST(OpCycles, NarrowInputsPackKernelColumnsIntoChannels) {
  // The RGB stem: 3x3 over ic 3 packs kw*ic = 9 into one 16-lane group, so 3 taps, not 9.
  const ConvCase stem{.h = 8, .w = 8, .ic = 3, .oc = 16, .k = 3};
  EXPECT_EQ(conv_cycles(stem), 8 * 3);
  Target plain = kv260();
  plain.channel_augmentation = false;
  EXPECT_EQ(conv_cycles(stem, plain), 8 * 9);
  // Wide inputs are unaffected.
  EXPECT_EQ(conv_cycles({.ic = 32, .oc = 16, .k = 3}),
            conv_cycles({.ic = 32, .oc = 16, .k = 3}, plain));
}

TEST(OpCycles, StrideShrinksTheOutput) {
  // 16x16 -> 8x8 with stride 2: a quarter of the stride-1 work (which has 2 pixel groups).
  const std::int64_t s1 = conv_cycles({.h = 16, .w = 16, .ic = 16, .oc = 16, .k = 3});
  const std::int64_t s2 = conv_cycles({.h = 16, .w = 16, .ic = 16, .oc = 16, .k = 3, .stride = 2});
  EXPECT_EQ(s1, 2 * 16 * 9);
  EXPECT_EQ(s2, 1 * 8 * 9);
}

TEST(OpCycles, DepthwiseRunsOnTheAluAtHalfThePixelParallelism) {
  const Prediction p = predict(one_conv({.ic = 32, .k = 3, .depthwise = true}), kv260());
  const OpTiming& t = only_op(p);
  // ceil(32/16) channel groups x ceil(8/4) pixel groups x 8 rows x 9 taps
  EXPECT_EQ(t.cycles, 2 * 2 * 8 * 9);
  EXPECT_EQ(t.padded_macs, t.cycles * 4 * 16);
  // Widths pad to the ALU's 4 pixels, not the conv engine's 8.
  EXPECT_EQ(
      only_op(predict(one_conv({.w = 12, .ic = 32, .k = 3, .depthwise = true}), kv260())).cycles,
      2 * 3 * 8 * 9);
  EXPECT_EQ(t.macs, 8 * 8 * 32 * 9);
  // A conv2d whose group equals its channels is a depthwise conv too.
  const Prediction g = predict(one_conv({.ic = 32, .oc = 32, .k = 3, .group = 32}), kv260());
  EXPECT_EQ(only_op(g).engine, Device::Dpu);
  EXPECT_EQ(only_op(g).cycles, t.cycles);
}

TEST(OpCycles, PoolsAndEltwiseRunAtPixelThroughput) {
  GraphBuilder b("misc");
  const Value x = b.input("x", {1, 16, 16, 32}, 6);
  Pool2dSpec pool;  // 2x2 stride 2 -> 8x8
  const Value pooled = b.maxpool2d("pool", x, pool);
  const Value y = b.input("y", {1, 8, 8, 32}, 6);
  b.add("add", {pooled, y}, 5);
  const Prediction p = predict(b.finish(), kv260());
  ASSERT_EQ(p.ops.size(), 2u);
  // channel groups x ALU pixel groups (4 pixels) x rows x taps, then x operands
  EXPECT_EQ(p.ops[0].cycles, 2 * 2 * 8 * 4);
  EXPECT_EQ(p.ops[1].cycles, 2 * 2 * 8 * 2);
}

TEST(OpTime, ComputeAndMemoryTimesFollowTheTarget) {
  const Target t = kv260();
  const OpTiming op = only_op(predict(one_conv({.h = 56, .w = 56, .ic = 64, .oc = 64, .k = 3}), t));
  EXPECT_DOUBLE_EQ(op.compute_ms, static_cast<double>(op.cycles) / (300e3 * 0.5));
  const std::int64_t bytes = 64 * 3 * 3 * 64 + 2 * 56 * 56 * 64;  // weights, input, output
  EXPECT_EQ(op.bytes, bytes);
  EXPECT_DOUBLE_EQ(op.memory_ms, static_cast<double>(bytes) / (19.2e6 * t.ddr_efficiency));
  // A layer this large hides the latency floor: its time is the larger of the two.
  EXPECT_GT(op.compute_ms, t.min_op_cycles / 300e3);
  EXPECT_DOUBLE_EQ(op.floor_ms, 0.0);
  EXPECT_DOUBLE_EQ(op.ms, std::max(op.compute_ms, op.memory_ms));
}

TEST(OpTime, BigSpatialConvIsComputeBoundAndFcIsMemoryBound) {
  const Target t = kv260();
  const OpTiming conv =
      only_op(predict(one_conv({.h = 56, .w = 56, .ic = 64, .oc = 64, .k = 3}), t));
  EXPECT_EQ(conv.bound, Bound::Compute);
  EXPECT_GT(conv.compute_ms, conv.memory_ms);
  // A classifier: 2M weights for 2M MACs, each weight byte used once.
  const OpTiming fc = only_op(predict(one_conv({.h = 1, .w = 1, .ic = 2048, .oc = 1000}), t));
  EXPECT_EQ(fc.bound, Bound::Memory);
  EXPECT_GT(fc.memory_ms, fc.compute_ms);
  EXPECT_DOUBLE_EQ(fc.ms, fc.memory_ms);
}

// Where the compiler would put ops it cannot run on the DPU.
const OpTiming& find_op(const Prediction& p, const std::string& name) {
  for (const auto& t : p.ops)
    if (t.op == name) return t;
  ADD_FAILURE() << "no timing for " << name;
  static const OpTiming none;
  return none;
}

void expect_cpu(const Graph& g, const std::string& op, const std::string& reason_part) {
  const Prediction p = predict(g, kv260());
  const OpTiming& t = find_op(p, op);
  EXPECT_EQ(t.engine, Device::Cpu) << op;
  EXPECT_EQ(t.bound, Bound::Cpu) << op;
  EXPECT_NE(t.cpu_reason.find(reason_part), std::string::npos) << t.cpu_reason;
  EXPECT_GT(t.ms, 0.0);
  EXPECT_GT(p.cpu_ms, 0.0);
  EXPECT_LT(p.dpu_share, 1.0);
}

TEST(CpuPlacement, SoftmaxRunsOnTheCpuAtTheA53Rate) {
  GraphBuilder b("softmax");
  const Value x = b.input("x", {1, 1000}, 4);
  b.softmax("softmax", x, -1, 7);
  const Graph g = b.finish();
  expect_cpu(g, "softmax", "softmax");
  const Target t = kv260();
  EXPECT_DOUBLE_EQ(find_op(predict(g, t), "softmax").ms,
                   25.0 * 1000 / (t.cpu_transcendental_gflops * 1e6));
}

TEST(CpuPlacement, LeakyReluOnlyWithAlphaPointOne) {
  GraphBuilder b("leaky");
  const Value x = b.input("x", {1, 8, 8, 16}, 4);
  b.leaky_relu("leaky02", x, 0.2, 4);
  b.leaky_relu("leaky01", x, 0.1, 4);
  const Graph g = b.finish();
  expect_cpu(g, "leaky02", "alpha");
  EXPECT_EQ(find_op(predict(g, kv260()), "leaky01").engine, Device::Dpu);
}

TEST(CpuPlacement, ConvLimits) {
  expect_cpu(one_conv({.h = 20, .w = 20, .k = 17}), "conv", "kernel 17x17");
  expect_cpu(one_conv({.h = 20, .w = 20, .k = 1, .stride = 9}), "conv", "stride 9x9");
  expect_cpu(one_conv({.ic = 32, .oc = 32, .k = 3, .group = 2}), "conv", "grouped");
  // kw*kh*ceil(ic/16): 16*16*9 = 2304 > 2048; 16*16*8 = 2048 fits.
  expect_cpu(one_conv({.h = 16, .w = 16, .ic = 144, .k = 16}), "conv", "2304 > 2048");
  EXPECT_EQ(only_op(predict(one_conv({.h = 16, .w = 16, .ic = 128, .k = 16}), kv260())).engine,
            Device::Dpu);
  expect_cpu(one_conv({.h = 1, .w = 1, .ic = 16, .oc = 4112}), "conv", "output channels 4112");
  EXPECT_EQ(only_op(predict(one_conv({.h = 1, .w = 1, .ic = 16, .oc = 4096}), kv260())).engine,
            Device::Dpu);
}

TEST(CpuPlacement, CpuConvCostsItsFlopsAtTheA53GemmRate) {
  const Target t = kv260();
  const Prediction p = predict(one_conv({.h = 20, .w = 20, .k = 1, .stride = 9}), t);
  const OpTiming& op = only_op(p);
  EXPECT_DOUBLE_EQ(op.ms, 2.0 * static_cast<double>(op.macs) / (t.cpu_gemm_gflops * 1e6));
}

TEST(CpuPlacement, EachOpClassHasItsOwnRate) {
  // The same tensor through a CPU op of each class: the time is flops / the class's rate.
  GraphBuilder b("classes");
  const Value x = b.input("x", {1, 1000}, 4);
  b.softmax("softmax", x, -1, 7);
  b.leaky_relu("leaky", x, 0.2, 4);
  const Graph g = b.finish();
  Target t = kv260();
  const Prediction before = predict(g, t);
  t.cpu_transcendental_gflops *= 2;
  const Prediction faster = predict(g, t);
  EXPECT_DOUBLE_EQ(find_op(faster, "softmax").ms, find_op(before, "softmax").ms / 2);
  EXPECT_DOUBLE_EQ(find_op(faster, "leaky").ms, find_op(before, "leaky").ms);
  EXPECT_DOUBLE_EQ(find_op(before, "leaky").ms, 4.0 * 1000 / (t.cpu_elementwise_gflops * 1e6));
}

TEST(CpuPlacement, MatmulOfTwoFeatureMapsRunsOnTheCpu) {
  GraphBuilder b("attention");
  const Value q = b.input("q", {1, 16, 32}, 4);
  const Value k = b.input("k", {1, 16, 32}, 4);
  b.matmul("scores", q, k, std::nullopt, /*transpose_b=*/true, 3);
  expect_cpu(b.finish(), "scores", "two feature maps");
}

TEST(TimeOp, PricesOneOpWhereAsked) {
  const Graph g = one_conv({.h = 16, .w = 16, .ic = 32, .oc = 32, .k = 3});
  const Target t = kv260();
  const auto dpu = time_op(g, g.op("conv"), t);
  const auto cpu = time_op(g, g.op("conv"), t, Device::Cpu);
  ASSERT_TRUE(dpu && cpu);
  EXPECT_EQ(dpu->engine, Device::Dpu);
  EXPECT_EQ(cpu->engine, Device::Cpu);
  EXPECT_GT(cpu->ms, 10 * dpu->ms);
  EXPECT_FALSE(time_op(g, g.op("conv_fix"), t).has_value());  // a fix costs nothing alone
  EXPECT_FALSE(time_op(g, g.op("w"), t).has_value());
}

}  // namespace
}  // namespace dpushard
