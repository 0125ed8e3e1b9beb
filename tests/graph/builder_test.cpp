#include <gtest/gtest.h>

#include <cmath>

#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/shape.hpp"

namespace dpushard {
namespace {

TEST(Builder, EmitsTheQuantizersFixChains) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 4, 4, 3}, 5);
  auto w = b.constant("w", {8, 3, 3, 3}, std::vector<std::int8_t>(8 * 27, -3), 6);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::LeakyRelu;
  auto y = b.conv2d("conv", x, w, std::nullopt, spec, 2);
  Graph g = b.finish();
  // data -> fix
  EXPECT_EQ(g.op("x_fix").type, "fix");
  EXPECT_EQ(g.op("x_fix").producers("input"), std::vector<std::string>{"x"});
  // const holds q * 2^-fp exactly
  const auto values = const_values(g.op("w"));
  EXPECT_FLOAT_EQ(values[0], -3.0f / 64.0f);
  // conv -> leaky-relu(alpha 0.1) -> fix
  EXPECT_EQ(y.op, "conv_fix");
  const Op& leaky = g.op(g.op("conv_fix").producers("input").front());
  EXPECT_EQ(leaky.type, "leaky-relu");
  EXPECT_FLOAT_EQ(static_cast<float>(float_attr(leaky.attrs, "alpha", 0)), 0.1f);
  EXPECT_EQ(int_attr(g.op("conv_fix").attrs, "fix_point", 0), 2);
  EXPECT_EQ(string_attr(g.op("conv_fix").attrs, "round_mode", ""), "DPU_ROUND");
  // XIR orders kernel {w, h}
  EXPECT_EQ(ints_attr(g.op("conv").attrs, "kernel", "conv"), (std::vector<std::int64_t>{3, 3}));
  EXPECT_NO_THROW(validate(g));
}

TEST(Builder, FinishValidatesAndEmpties) {
  GraphBuilder b("g");
  b.input("x", {1, 2}, 0);
  Graph g = b.finish();
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(b.graph().size(), 0u);
}

}  // namespace
}  // namespace dpushard
