// add, mul and standalone activations in the ref backend, against values worked out by hand.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ref_test_util.hpp"

namespace dpushard {
namespace {

using testing::add_fix;
using testing::add_op;
using ::testing::ElementsAre;
using testing::ints;
using testing::q8;
using testing::qtensor;
using testing::run_one;
using testing::run_ref;

TEST(RefAdd, DifferentFixPointsAlignToTheLargest) {
  // a fp 2, b fp 4, out fp 3: acc = (a << 2) + b at scale 2^-4, then shift 1.
  GraphBuilder b("add");
  auto a = b.input("a", {1, 4}, 2);
  auto c = b.input("b", {1, 4}, 4);
  b.add("s", {a, c}, 3);
  // 20 + 3 = 23 -> 11.5 -> 12; -16 + 3 = -13 -> -6.5 -> -6;
  // 508 + 127 = 635 -> 317.5 -> 127 (saturated); -512 - 128 = -640 -> -320 -> -128.
  const auto out = run_ref(b.finish(), {qtensor("a_fix", {1, 4}, 2, {5, -4, 127, -128}),
                                        qtensor("b_fix", {1, 4}, 4, {3, 3, 127, -128})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_THAT(ints(out[0]), ElementsAre(12, -6, 127, -128));
  EXPECT_EQ(out[0].fix_point, 3);
}

TEST(RefAdd, ReluAfterAdd) {
  GraphBuilder b("add");
  auto a = b.input("a", {1, 2}, 0);
  auto c = b.input("b", {1, 2}, 0);
  b.add("s", {a, c}, 0, Nonlinear::Relu);
  // {3 - 4, 1 + 5} = {-1, 6} -> {0, 6}.
  const auto out = run_ref(
      b.finish(), {qtensor("a_fix", {1, 2}, 0, {3, 1}), qtensor("b_fix", {1, 2}, 0, {-4, 5})});
  EXPECT_THAT(ints(out.at(0)), ElementsAre(0, 6));
}

TEST(RefMul, ProductShiftedToTheOutputFixPoint) {
  // a fp 3, b fp 2: product at scale 2^-5; fp_out 4: shift 1.
  GraphBuilder b("mul");
  auto a = b.input("a", {1, 4}, 3);
  auto c = b.input("b", {1, 4}, 2);
  b.mul("m", a, c, 4);
  // 8*3 = 24 -> 12 (1.0 * 0.75); -12*3 = -36 -> -18; 127*127 -> 127; -1*3 = -3 -> -1.5 -> -1.
  const auto out = run_ref(b.finish(), {qtensor("a_fix", {1, 4}, 3, {8, -12, 127, -1}),
                                        qtensor("b_fix", {1, 4}, 2, {3, 3, 127, 3})});
  EXPECT_THAT(ints(out.at(0)), ElementsAre(12, -18, 127, -1));
}

TEST(RefMul, BroadcastsAChannelVector) {
  GraphBuilder b("mul");
  auto a = b.input("a", {1, 1, 2, 3}, 0);
  auto s = b.constant("s", {3}, q8({1, -1, 2}), 0);
  b.mul("m", a, s, 0);
  // {1, 2, 3, 4, 5, 6} * {1, -1, 2} per pixel.
  EXPECT_THAT(run_one(b.finish(), qtensor("a_fix", {1, 1, 2, 3}, 0, {1, 2, 3, 4, 5, 6})),
              ElementsAre(1, -2, 6, 4, -5, 12));
}

TEST(RefActivation, StandaloneReluRescales) {
  // fp 2 -> fp 1: relu then shift 1: {0, 5/2 = 2.5 -> 3, 1.5 -> 2, 0}.
  GraphBuilder b("relu");
  b.relu("r", b.input("x", {1, 4}, 2), 1);
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 4}, 2, {-5, 5, 3, -1})),
              ElementsAre(0, 3, 2, 0));
}

TEST(RefActivation, StandaloneRelu6ClampsAtSix) {
  // fp 3: six = 48.
  GraphBuilder b("relu6");
  b.relu6("r", b.input("x", {1, 4}, 3), 3);
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 4}, 3, {127, 48, 49, -3})),
              ElementsAre(48, 48, 48, 0));
}

TEST(RefActivation, StandaloneLeaky) {
  // -64 * 26 / 256 = -6.5 -> -6; -10 * 26 / 256 = -1.015625 -> -1; 7 stays.
  GraphBuilder b("leaky");
  b.leaky_relu("l", b.input("x", {1, 3}, 0), 0.1, 0);
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 3}, 0, {-64, -10, 7})),
              ElementsAre(-6, -1, 7));
}

TEST(RefActivation, LeakyWithAnotherAlphaIsAFloatOp) {
  // alpha 0.2, fp 1 -> fp 2: -2.5 * 0.2 = -0.5 -> -2; 2.0 -> 8; -1.5 * 0.2 = -0.3 -> -1.2 -> -1.
  GraphBuilder b("leaky");
  b.leaky_relu("l", b.input("x", {1, 3}, 1), 0.2, 2);
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 3}, 1, {-5, 4, -3})),
              ElementsAre(-2, 8, -1));
}

TEST(RefActivation, FixOfAFixedTensorRescales) {
  // fp 4 -> fp 2: 7/4 = 1.75 -> 2; -6/4 = -1.5 -> -1; -10/4 = -2.5 -> -2; 127/4 = 31.75 -> 32.
  GraphBuilder b("fix");
  b.fix("again", b.input("x", {1, 4}, 4), 2);
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 4}, 4, {7, -6, -10, 127})),
              ElementsAre(2, -1, -2, 32));
}

TEST(RefActivation, HardSigmoidAndHardSwish) {
  // x fp 2 = {-4, 1, 3, -1.5}. hard-sigmoid = relu6(x + 3) / 6 = {0, 0.667, 1, 0.25},
  // fp 6 -> {0, 42.67 -> 43, 64, 16}; hard-swish = x * that = {0, 0.667, 3, -0.375},
  // fp 4 -> {0, 10.67 -> 11, 48, -6}.
  GraphBuilder b("hard");
  auto x = b.input("x", {1, 4}, 2);
  Graph g = b.finish();
  add_op(g, "hs", "hard-sigmoid", {{"input", {x.op}}}, {}, {1, 4});
  add_fix(g, "hs", 6);
  add_op(g, "hw", "hard-swish", {{"input", {x.op}}}, {}, {1, 4});
  add_fix(g, "hw", 4);
  const auto out = run_ref(g, {qtensor("x_fix", {1, 4}, 2, {-16, 4, 12, -6})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(ints(out[0]), ElementsAre(0, 43, 64, 16));
  EXPECT_THAT(ints(out[1]), ElementsAre(0, 11, 48, -6));
}

}  // namespace
}  // namespace dpushard
