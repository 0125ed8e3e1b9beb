// Rounding modes, quantization, the DPU average-pool factor and int8 tensor helpers.
// Every expected value is worked out by hand in the comment beside it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/numerics.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;

TEST(RoundModes, TiesOfBothSigns) {
  // STD_ROUND: half away from zero.
  EXPECT_EQ(round_with(RoundMode::Std, -2.5), -3.0);
  EXPECT_EQ(round_with(RoundMode::Std, -1.5), -2.0);
  EXPECT_EQ(round_with(RoundMode::Std, 1.5), 2.0);
  EXPECT_EQ(round_with(RoundMode::Std, 2.5), 3.0);
  // DPU_ROUND: half toward +infinity.
  EXPECT_EQ(round_with(RoundMode::Dpu, -2.5), -2.0);
  EXPECT_EQ(round_with(RoundMode::Dpu, -1.5), -1.0);
  EXPECT_EQ(round_with(RoundMode::Dpu, 1.5), 2.0);
  EXPECT_EQ(round_with(RoundMode::Dpu, 2.5), 3.0);
  // PY3_ROUND: half to even.
  EXPECT_EQ(round_with(RoundMode::Py3, -2.5), -2.0);
  EXPECT_EQ(round_with(RoundMode::Py3, -1.5), -2.0);
  EXPECT_EQ(round_with(RoundMode::Py3, 1.5), 2.0);
  EXPECT_EQ(round_with(RoundMode::Py3, 2.5), 2.0);
}

TEST(RoundModes, NonTiesRoundToNearestInEveryMode) {
  for (RoundMode mode : {RoundMode::Std, RoundMode::Dpu, RoundMode::Py3}) {
    EXPECT_EQ(round_with(mode, -2.4), -2.0);
    EXPECT_EQ(round_with(mode, -2.6), -3.0);
    EXPECT_EQ(round_with(mode, 2.4), 2.0);
    EXPECT_EQ(round_with(mode, 2.6), 3.0);
  }
}

TEST(RoundModes, ParseAndName) {
  for (RoundMode mode : {RoundMode::Std, RoundMode::Dpu, RoundMode::Py3})
    EXPECT_EQ(parse_round_mode(round_mode_name(mode)), mode);
  EXPECT_EQ(round_mode_name(RoundMode::Dpu), "DPU_ROUND");
  try {
    parse_round_mode("HALF_UP");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("HALF_UP"));
  }
}

TEST(ShiftRoundDpu, NegativeAccumulatorsRoundHalfUp) {
  EXPECT_EQ(shift_round_dpu(-5, 1), -2);        // -2.5 -> -2
  EXPECT_EQ(shift_round_dpu(-3, 1), -1);        // -1.5 -> -1
  EXPECT_EQ(shift_round_dpu(-7, 2), -2);        // -1.75 -> -2
  EXPECT_EQ(shift_round_dpu(-6, 2), -1);        // -1.5 -> -1
  EXPECT_EQ(shift_round_dpu(-10, 2), -2);       // -2.5 -> -2
  EXPECT_EQ(shift_round_dpu(-9, 2), -2);        // -2.25 -> -2
  EXPECT_EQ(shift_round_dpu(5, 1), 3);          // 2.5 -> 3
  EXPECT_EQ(shift_round_dpu(3, 1), 2);          // 1.5 -> 2
  EXPECT_EQ(shift_round_dpu(-163840, 16), -2);  // -2.5 -> -2
  EXPECT_EQ(shift_round_dpu(-7, 0), -7);        // shift 0 is the identity
  EXPECT_EQ(shift_round_dpu(-3, -2), -12);      // a negative shift multiplies
}

TEST(Quantize, RoundsWithTheModeAndSaturates) {
  EXPECT_EQ(quantize(1.3, 2, RoundMode::Dpu), 5);         // 5.2 -> 5
  EXPECT_EQ(quantize(-0.625, 2, RoundMode::Std), -3);     // -2.5 -> -3
  EXPECT_EQ(quantize(-0.625, 2, RoundMode::Dpu), -2);     // -2.5 -> -2
  EXPECT_EQ(quantize(-0.625, 2, RoundMode::Py3), -2);     // -2.5 -> -2 (even)
  EXPECT_EQ(quantize(-0.375, 2, RoundMode::Py3), -2);     // -1.5 -> -2 (even)
  EXPECT_EQ(quantize(100.0, 2, RoundMode::Dpu), 127);     // 400 saturates
  EXPECT_EQ(quantize(-100.0, 2, RoundMode::Dpu), -128);   // -400 saturates
  EXPECT_EQ(quantize(31.875, 2, RoundMode::Dpu), 127);    // 127.5 -> 128 -> 127
  EXPECT_EQ(quantize(-32.125, 2, RoundMode::Dpu), -128);  // -128.5 -> -128
  EXPECT_EQ(quantize(3.0, -1, RoundMode::Dpu), 2);        // 1.5 -> 2 (negative fix_point)
  EXPECT_EQ(quantize(std::nan(""), 2, RoundMode::Dpu), 0);
  EXPECT_EQ(dequantize(-3, 2), -0.75);
}

TEST(AvgPoolFactor, TableEntries) {
  auto check = [](std::int64_t k, std::int64_t n, int m) {
    const AvgPoolFactor f = avgpool_factor(k, k);
    EXPECT_EQ(f.multiplier, n) << k << "x" << k;
    EXPECT_EQ(f.shift, m) << k << "x" << k;
  };
  check(3, 7, 6);     // 7/64
  check(5, 10, 8);    // 10/256
  check(6, 7, 8);     // 7/256
  check(7, 21, 10);   // 21/1024
  check(14, 21, 12);  // 21/4096
}

TEST(AvgPoolFactor, PowersOfTwoAreExact) {
  EXPECT_EQ(avgpool_factor(1, 1).multiplier, 1);
  EXPECT_EQ(avgpool_factor(1, 1).shift, 0);
  EXPECT_EQ(avgpool_factor(2, 2).shift, 2);  // 1/4
  EXPECT_EQ(avgpool_factor(8, 8).shift, 6);  // 1/64 (ResNet-20's global pool)
  EXPECT_EQ(avgpool_factor(8, 8).multiplier, 1);
  EXPECT_EQ(avgpool_factor(4, 2).shift, 3);  // 1/8
}

TEST(AvgPoolFactor, SearchFindsTheClosestFraction) {
  // 1x3: M in [0, 9): the errors |round(2^M/3)/2^M - 1/3| shrink with M; M = 8 gives
  // 85/256 = 0.33203125 (error 0.0013).
  EXPECT_EQ(avgpool_factor(1, 3).multiplier, 85);
  EXPECT_EQ(avgpool_factor(1, 3).shift, 8);
  // 10x10: M in [0, 14): 41/4096 and 82/8192 are equally close to 0.01 (error 9.8e-6);
  // the first, with fewer bits, wins.
  EXPECT_EQ(avgpool_factor(10, 10).multiplier, 41);
  EXPECT_EQ(avgpool_factor(10, 10).shift, 12);
  EXPECT_THROW(avgpool_factor(0, 3), Error);
}

TEST(QTensorHelpers, ElementCount) {
  EXPECT_EQ((QTensor{"t", {2, 3, 4}, 0, {}}.element_count()), 24);
  EXPECT_EQ((QTensor{"t", {}, 0, {}}.element_count()), 1);
}

TEST(QTensorHelpers, Sha256OfKnownBytes) {
  QTensor empty{"e", {0}, 0, {}};
  EXPECT_EQ(sha256_hex(empty.data),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  QTensor abc{"abc", {3}, 0, {0x61, 0x62, 0x63}};  // "abc", the FIPS 180-2 example
  EXPECT_EQ(sha256_hex(abc.data),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(QTensorHelpers, RandomIsDeterministicAndUniform) {
  const QTensor a = random_qtensor("x", {1, 32, 32, 3}, 5, 7);
  const QTensor b = random_qtensor("x", {1, 32, 32, 3}, 5, 7);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.fix_point, 5);
  EXPECT_EQ(a.data.size(), 3072u);
  EXPECT_NE(a.data, random_qtensor("x", {1, 32, 32, 3}, 5, 8).data);
  EXPECT_NE(a.data, random_qtensor("y", {1, 32, 32, 3}, 5, 7).data);
  // 3072 uniform draws: both ends of the range appear and the mean is near -0.5.
  int lo = 0, hi = 0;
  double sum = 0;
  for (auto v : a.data) {
    lo += v < -120;
    hi += v > 120;
    sum += v;
  }
  EXPECT_GT(lo, 20);
  EXPECT_GT(hi, 20);
  EXPECT_NEAR(sum / 3072.0, -0.5, 6.0);
}

}  // namespace
}  // namespace dpushard
