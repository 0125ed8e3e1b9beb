#include <gtest/gtest.h>

#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/cost.hpp"

namespace dpushard {
namespace {

TEST(Cost, ConvMatmulParamsAndMacs) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 8, 8, 4}, 4);
  auto w = b.constant("w", {16, 3, 3, 4}, std::vector<std::int8_t>(16 * 9 * 4, 1), 7);
  auto bias = b.constant("b", {16}, std::vector<std::int8_t>(16, 1), 7);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::Relu;
  auto c = b.conv2d("conv", x, w, bias, spec, 4);
  Pool2dSpec gp;
  gp.global = true;
  auto p = b.avgpool2d("gap", c, gp, 4);
  auto f = b.flatten("flat", p, 1, -1);
  auto fw = b.constant("fw", {10, 16}, std::vector<std::int8_t>(160, 1), 7);
  b.matmul("fc", f, fw, std::nullopt, true, 4);
  Graph g = b.finish();
  const GraphCost cost = graph_cost(g);
  EXPECT_EQ(cost.params, 16 * 9 * 4 + 16 + 160);
  EXPECT_EQ(cost.weight_bytes, cost.params);
  // conv: 8*8*16 outputs x 36 taps; fc: 10 outputs x 16.
  EXPECT_EQ(cost.macs, 8 * 8 * 16 * 36 + 10 * 16);
  // activations (int8): input 256 + conv 1024 + gap 16 + fc 10
  EXPECT_EQ(cost.activation_bytes, 256 + 1024 + 16 + 10);
  // x, w, b, conv, gap, fw, fc
  EXPECT_EQ(cost.ops_by_type.at("fix"), 7);
  EXPECT_EQ(cost.ops_by_type.at("relu"), 1);
}

TEST(Cost, DepthwiseMacs) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 8, 8, 4}, 4);
  auto w = b.constant("w", {1, 3, 3, 4}, std::vector<std::int8_t>(36, 1), 7);
  b.depthwise_conv2d("dw", x, w, std::nullopt, Conv2dSpec{}, 4);
  EXPECT_EQ(graph_cost(b.finish()).macs, 8 * 8 * 4 * 9);
}

}  // namespace
}  // namespace dpushard
