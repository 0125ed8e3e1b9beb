// conv2d / depthwise-conv2d in the ref backend, against values worked out by hand.
// acc = sum x_q * w_q (+ bias aligned), nonlinear, DPU_ROUND(acc / 2^shift_cut), saturate.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ref_test_util.hpp"

namespace dpushard {
namespace {

using ::testing::ElementsAre;
using testing::q8;
using testing::qtensor;
using testing::run_one;

Conv2dSpec pointwise() {
  Conv2dSpec spec;
  spec.kernel = {1, 1};
  spec.pad = {0, 0, 0, 0};
  return spec;
}

TEST(RefConv, ShiftCutZeroSaturatesAtBothEnds) {
  // fp_in 0 + fp_w 0 - fp_out 0: shift_cut 0. x = {3, -2}.
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 2}, 0);
  auto w = b.constant("w", {3, 1, 1, 2}, q8({2, 1, 100, 0, 0, 100}), 0);
  b.conv2d("c", x, w, std::nullopt, pointwise(), 0);
  // oc0: 3*2 + -2*1 = 4; oc1: 3*100 = 300 -> 127; oc2: -2*100 = -200 -> -128.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 2}, 0, {3, -2})),
              ElementsAre(4, 127, -128));
}

TEST(RefConv, ShiftCutSixteenRoundsNegativeTiesUp) {
  // fp_in 8 + fp_w 8 - fp_out 0 = 16. 20 channels of x = -128 (-0.5).
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 20}, 8);
  std::vector<int> w;
  for (int oc_w : {64, 32, 96, -64})
    for (int i = 0; i < 20; ++i) w.push_back(oc_w);
  b.conv2d("c", x, b.constant("w", {4, 1, 1, 20}, q8(w), 8), std::nullopt, pointwise(), 0);
  // acc = 20 * -128 * w: w 64 -> -163840 / 65536 = -2.5 -> -2;
  // w 32 -> -1.25 -> -1; w 96 -> -3.75 -> -4; w -64 -> +2.5 -> 3.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 20}, 8, std::vector<int>(20, -128))),
              ElementsAre(-2, -1, -4, 3));
}

TEST(RefConv, NegativeShiftBiasAlignsTheAccumulatorUp) {
  // fp_in 2 + fp_w 2 = 4 < fp_b 6: shift_bias = -2. The accumulator moves to scale 2^-6
  // (acc << 2) and the bias is added there exactly; then the shift to fp_out 2 is 4.
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 1}, 2);
  auto w = b.constant("w", {2, 1, 1, 1}, q8({1, 2}), 2);
  auto bias = b.constant("b", {2}, q8({2, 8}), 6);
  b.conv2d("c", x, w, bias, pointwise(), 2);
  // x = 1 (0.25). oc0: (1*1 << 2) + 2 = 6 -> 6/16 = 0.375 -> 0 (shifting the bias right
  // first would give round(2/4) = 1, (1 + 1)/4 = 0.5 -> 1: the exact sum is 0.09375).
  // oc1: (1*2 << 2) + 8 = 16 -> 1.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 1}, 2, {1})), ElementsAre(0, 1));
}

TEST(RefConv, PositiveShiftBias) {
  // fp_in 1 + fp_w 1 = 2, fp_b 0: bias << 2; fp_out 0 -> shift_cut 2.
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 1}, 1);
  auto w = b.constant("w", {2, 1, 1, 1}, q8({3, -3}), 1);
  auto bias = b.constant("b", {2}, q8({1, -1}), 0);
  b.conv2d("c", x, w, bias, pointwise(), 0);
  // x = 5: oc0 15 + 4 = 19 -> 4.75 -> 5; oc1 -15 - 4 = -19 -> -4.75 -> -5.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 1}, 1, {5})), ElementsAre(5, -5));
}

TEST(RefConv, AsymmetricPaddingAndStrideTwo) {
  // 3x3 input 1..9, 2x2 kernel of ones, pad left 1 / bottom 1, stride 2 -> 2x2 output.
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 3, 3, 1}, 0);
  Conv2dSpec spec;
  spec.kernel = {2, 2};
  spec.stride = {2, 2};
  spec.pad = {1, 0, 0, 1};  // left, right, top, bottom
  b.conv2d("c", x, b.constant("w", {1, 2, 2, 1}, q8({1, 1, 1, 1}), 0), std::nullopt, spec, 0);
  // (0,0): rows 0-1, cols -1(pad)..0: 1 + 4 = 5. (0,1): rows 0-1, cols 1-2: 2+3+5+6 = 16.
  // (1,0): rows 2..3(pad), col 0: 7. (1,1): row 2, cols 1-2: 8 + 9 = 17.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 3, 3, 1}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 9})),
              ElementsAre(5, 16, 7, 17));
}

TEST(RefConv, DilationTwo) {
  // 5x5 input x(r, c) = 5r + c (fp 1), 2x2 kernel {1, 2; 3, 4} (fp 0) dilated by 2 -> 3x3.
  // y = x(r,c) + 2x(r,c+2) + 3x(r+2,c) + 4x(r+2,c+2) = 10(5r + c) + 82; fp_out 0 -> shift 1.
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 5, 5, 1}, 1);
  Conv2dSpec spec;
  spec.kernel = {2, 2};
  spec.dilation = {2, 2};
  spec.pad = {0, 0, 0, 0};
  b.conv2d("c", x, b.constant("w", {1, 2, 2, 1}, q8({1, 2, 3, 4}), 0), std::nullopt, spec, 0);
  std::vector<int> in(25);
  for (int i = 0; i < 25; ++i) in[static_cast<std::size_t>(i)] = i;
  // 82/2 = 41, 92/2 = 46, 102/2 = 51, 132/2 = 66, ... 202/2 = 101.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 5, 5, 1}, 1, in)),
              ElementsAre(41, 46, 51, 66, 71, 76, 91, 96, 101));
}

TEST(RefConv, GroupsSplitTheChannels) {
  // 4 input channels in 2 groups, 2 output channels per group; weights [4, 1, 1, 2].
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 4}, 0);
  Conv2dSpec spec = pointwise();
  spec.group = 2;
  b.conv2d("c", x, b.constant("w", {4, 1, 1, 2}, q8({1, 10, 2, 0, -1, 5, 0, -3}), 0), std::nullopt,
           spec, 0);
  // x = {1, 2 | 3, 4}: oc0 1 + 20 = 21; oc1 2; oc2 -3 + 20 = 17; oc3 -12.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 4}, 0, {1, 2, 3, 4})),
              ElementsAre(21, 2, 17, -12));
}

TEST(RefConv, Depthwise) {
  // 2x2x2 input: channel 0 = {1, 2, 3, 4}, channel 1 = {-1, -2, -3, -4}; 2x2 kernel,
  // weights [1, 2, 2, 2]: channel 0 all ones, channel 1 = {1, 2, 3, 4}; bias {5, -5}.
  GraphBuilder b("dw");
  auto x = b.input("x", {1, 2, 2, 2}, 0);
  Conv2dSpec spec;
  spec.kernel = {2, 2};
  spec.pad = {0, 0, 0, 0};
  b.depthwise_conv2d("d", x, b.constant("w", {1, 2, 2, 2}, q8({1, 1, 1, 2, 1, 3, 1, 4}), 0),
                     b.constant("b", {2}, q8({5, -5}), 0), spec, 0);
  // c0: 1+2+3+4 + 5 = 15; c1: -1 - 4 - 9 - 16 - 5 = -35.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 2, 2, 2}, 0, {1, -1, 2, -2, 3, -3, 4, -4})),
              ElementsAre(15, -35));
}

TEST(RefConv, Relu6ClampsInAccumulatorScale) {
  // fp_in 4, fp_w 4 (acc scale 2^-8), fp_out 4: shift_cut 4; six = 6 << 8 = 1536.
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 1}, 4);
  Conv2dSpec spec = pointwise();
  spec.nonlinear = Nonlinear::Relu6;
  b.conv2d("c", x, b.constant("w", {3, 1, 1, 1}, q8({127, -16, 8}), 4), std::nullopt, spec, 4);
  // x = 127: 16129 -> 1536 -> 96 (6.0); -2032 -> 0; 1016 / 16 = 63.5 -> 64.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 1}, 4, {127})),
              ElementsAre(96, 0, 64));
}

TEST(RefConv, LeakyReluIs26Over256) {
  // shift_cut 0; negatives become acc * 26 / 256 rounded once with DPU_ROUND.
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 1}, 0);
  Conv2dSpec spec = pointwise();
  spec.nonlinear = Nonlinear::LeakyRelu;
  b.conv2d("c", x, b.constant("w", {4, 1, 1, 1}, q8({-8, -1, 5, -15}), 0), std::nullopt, spec, 0);
  // x = 8: -64 * 26 / 256 = -6.5 -> -6; -8 -> -0.8125 -> -1; 40 -> 40; -120 -> -12.1875 -> -12.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 1}, 0, {8})),
              ElementsAre(-6, -1, 40, -12));
}

TEST(RefConv, ReluAfterConv) {
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 1}, 0);
  Conv2dSpec spec = pointwise();
  spec.nonlinear = Nonlinear::Relu;
  b.conv2d("c", x, b.constant("w", {2, 1, 1, 1}, q8({-3, 3}), 0), std::nullopt, spec, 1);
  // x = 7: -21 -> 0; 21 -> shift -1 (fp_out 1): 42.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 1, 1, 1}, 0, {7})), ElementsAre(0, 42));
}

}  // namespace
}  // namespace dpushard
