// The zoo's internals: the int8 weight streams and the moment model used for fix points.

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "moments.hpp"
#include "weights.hpp"

namespace dpushard::zoo {
namespace {

TEST(UniformInt8, StaysInRangeWithTheExpectedMeanAndVariance) {
  const std::vector<std::int8_t> q = uniform_int8(stream_key(1, "w"), 1'000'003, -127, 127);
  ASSERT_EQ(q.size(), 1'000'003U);
  double mean = 0.0;
  double m2 = 0.0;
  int lowest = 0;
  int highest = 0;
  for (const std::int8_t v : q) {
    mean += v;
    m2 += static_cast<double>(v) * v;
    lowest = std::min<int>(lowest, v);
    highest = std::max<int>(highest, v);
  }
  mean /= static_cast<double>(q.size());
  m2 /= static_cast<double>(q.size());
  EXPECT_EQ(lowest, -127);
  EXPECT_EQ(highest, 127);
  EXPECT_NEAR(mean, 0.0, 0.3);
  EXPECT_NEAR(m2, uniform_int_variance(-127, 127), 0.01 * uniform_int_variance(-127, 127));
}

TEST(UniformInt8, SmallRangesAndOddCountsAreCovered) {
  const std::vector<std::int8_t> q = uniform_int8(stream_key(3, "bias"), 4'099, -16, 16);
  std::vector<int> seen(33, 0);
  for (const std::int8_t v : q) {
    ASSERT_GE(v, -16);
    ASSERT_LE(v, 16);
    ++seen[static_cast<std::size_t>(v + 16)];
  }
  for (const int count : seen) EXPECT_GT(count, 60);  // about 124 each
}

TEST(UniformInt8, StreamsDependOnSeedAndName) {
  const auto a = uniform_int8(stream_key(1, "expert0/w"), 64, -127, 127);
  EXPECT_EQ(a, uniform_int8(stream_key(1, "expert0/w"), 64, -127, 127));
  EXPECT_NE(a, uniform_int8(stream_key(2, "expert0/w"), 64, -127, 127));
  EXPECT_NE(a, uniform_int8(stream_key(1, "expert1/w"), 64, -127, 127));
}

// The quadrature is a 71-point grid: accurate to a few parts per thousand, far finer than
// the factor-of-two steps of a fix point.
TEST(Moments, ReluOfAStandardNormal) {
  const Moments out = after_relu(independent(1.0));
  EXPECT_NEAR(out.mean, 1.0 / std::sqrt(2.0 * std::numbers::pi), 3e-3);
  EXPECT_NEAR(out.m2(), 0.5, 1e-4);
  EXPECT_NEAR(out.shared, 0.0, 1e-9);
}

TEST(Moments, ReluKeepsPerChannelOffsetsShared) {
  // All variance in per-channel offsets: each channel is a constant, relu of it too.
  const Moments out = after_relu(Moments{0.0, 1.0, 0.0});
  EXPECT_NEAR(out.spread, 0.0, 1e-6);
  EXPECT_NEAR(out.m2(), 0.5, 1e-4);
}

TEST(Moments, GeluOfAStandardNormal) {
  // E[gelu(x)^2] for x ~ N(0, 1) is about 0.4252 and E[gelu(x)] = 1 / (2 sqrt(pi)) ~ 0.2821.
  const Moments out = after_gelu(independent(1.0));
  EXPECT_NEAR(out.mean, 0.2821, 3e-3);
  EXPECT_NEAR(out.m2(), 0.4252, 3e-3);
}

TEST(Moments, LinearTurnsTheMeanIntoChannelOffsets) {
  const Moments out = after_linear(Moments{2.0, 1.0, 3.0}, 0.5, 0.25);
  EXPECT_EQ(out.mean, 0.0);
  EXPECT_DOUBLE_EQ(out.shared, 0.5 * (4.0 + 1.0) + 0.25);
  EXPECT_DOUBLE_EQ(out.spread, 1.5);
}

TEST(Moments, MeanOverPositionsDividesOnlyTheSpread) {
  const Moments out = after_mean(Moments{1.0, 2.0, 100.0}, 100);
  EXPECT_DOUBLE_EQ(out.mean, 1.0);
  EXPECT_DOUBLE_EQ(out.shared, 2.0);
  EXPECT_DOUBLE_EQ(out.spread, 1.0);
}

TEST(Moments, LayernormNormalisesToUnitVariance) {
  const Moments out = after_layernorm(Moments{5.0, 3.0, 1.0}, 1.0, 0.0);
  EXPECT_NEAR(out.m2(), 1.0, 1e-12);
  EXPECT_NEAR(out.shared, 0.75, 1e-12);
}

TEST(ActivationFixPoint, PutsTheIntegerRmsBetween12And24) {
  for (const double rms : {1e-4, 0.01, 0.3, 1.0, 7.5, 100.0}) {
    const int fp = activation_fix_point(rms * rms);
    const double q_rms = rms * std::ldexp(1.0, fp);
    EXPECT_GT(q_rms, 12.0) << rms;
    EXPECT_LE(q_rms, 24.0) << rms;
  }
}

}  // namespace
}  // namespace dpushard::zoo
