// matmul / inner-product in the ref backend, against values worked out by hand.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ref_test_util.hpp"

namespace dpushard {
namespace {

using testing::add_fix;
using testing::add_op;
using ::testing::ElementsAre;
using testing::q8;
using testing::qtensor;
using testing::run_one;

TEST(RefMatmul, TransposeBWithBias) {
  // a [2, 3] = {1, 2, 3; -1, 0, 2}; b given [N=2, K=3] = {1, 1, 1; 2, -1, 0}; bias {10, -1}.
  GraphBuilder b("mm");
  auto a = b.input("a", {2, 3}, 0);
  auto w = b.constant("w", {2, 3}, q8({1, 1, 1, 2, -1, 0}), 0);
  b.matmul("m", a, w, b.constant("bias", {2}, q8({10, -1}), 0), true, 0);
  // row 0: 6 + 10 = 16, 0 - 1 = -1; row 1: 1 + 10 = 11, -2 - 1 = -3.
  EXPECT_THAT(run_one(b.finish(), qtensor("a_fix", {2, 3}, 0, {1, 2, 3, -1, 0, 2})),
              ElementsAre(16, -1, 11, -3));
}

TEST(RefMatmul, PlainLayoutWithShift) {
  // a fp 2, b fp 1, out fp 1: shift 2. a = {3, -5}, b [2, 2] = {2, 1; -1, 4}.
  GraphBuilder b("mm");
  auto a = b.input("a", {1, 2}, 2);
  b.matmul("m", a, b.constant("w", {2, 2}, q8({2, 1, -1, 4}), 1), std::nullopt, false, 1);
  // col 0: 6 + 5 = 11 -> 2.75 -> 3; col 1: 3 - 20 = -17 -> -4.25 -> -4.
  EXPECT_THAT(run_one(b.finish(), qtensor("a_fix", {1, 2}, 2, {3, -5})), ElementsAre(3, -4));
}

TEST(RefMatmul, TwoActivations) {
  // Attention-style product of two fixed activations: a [1, 2, 2] x b [1, 2, 2]^T.
  GraphBuilder b("mm");
  auto a = b.input("a", {1, 2, 2}, 0);
  auto c = b.input("b", {1, 2, 2}, 0);
  b.matmul("m", a, c, std::nullopt, true, 0);
  // a = {1, 2; 3, 4}, b = {1, 0; -1, 1}: a b^T = {1, 1; 3, 1}.
  const auto out = testing::run_ref(b.finish(), {qtensor("a_fix", {1, 2, 2}, 0, {1, 2, 3, 4}),
                                                 qtensor("b_fix", {1, 2, 2}, 0, {1, 0, -1, 1})});
  EXPECT_THAT(testing::ints(out.at(0)), ElementsAre(1, 1, 3, 1));
}

TEST(RefInnerProduct, FlattensFromAxis) {
  // x [1, 1, 1, 4] = {1, 2, 3, 4}; weights [2, 4]; bias {0, 2}: {1 + 4, -10 + 2}.
  GraphBuilder b("ip");
  auto x = b.input("x", {1, 1, 1, 4}, 0);
  auto w = b.constant("w", {2, 4}, q8({1, 0, 0, 1, -1, -1, -1, -1}), 0);
  auto bias = b.constant("bias", {2}, q8({0, 2}), 0);
  Graph g = b.finish();
  add_op(g, "fc", "inner-product", {{"input", {x.op}}, {"weights", {w.op}}, {"bias", {bias.op}}},
         {{"axis", std::int32_t{1}}}, {1, 2});
  add_fix(g, "fc", 0);
  EXPECT_THAT(run_one(g, qtensor("x_fix", {1, 1, 1, 4}, 0, {1, 2, 3, 4})), ElementsAre(5, -8));
}

}  // namespace
}  // namespace dpushard
