// Float ops in the ref backend: dequantize, compute in double, quantize with the fix's
// round mode. Each test checks hand-worked values and the same formula computed here.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ref_test_util.hpp"

namespace dpushard {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::q8;
using testing::qtensor;
using testing::run_one;

std::vector<int> quantized(const std::vector<double>& values, int fp) {
  std::vector<int> out;
  for (double v : values) out.push_back(quantize(v, fp, RoundMode::Dpu));
  return out;
}

TEST(RefFloat, Softmax) {
  // x = {1, 0, -1}: e / (e + 1 + 1/e) = 0.665241 -> 85.15 -> 85; 0.244728 -> 31.33 -> 31;
  // 0.090031 -> 11.52 -> 12 (fp 7).
  GraphBuilder b("softmax");
  b.softmax("s", b.input("x", {1, 3}, 2), -1, 7);
  const auto out = run_one(b.finish(), qtensor("x_fix", {1, 3}, 2, {4, 0, -4}));
  EXPECT_THAT(out, ElementsAre(85, 31, 12));
  const double sum = std::exp(1.0) + 1.0 + std::exp(-1.0);
  EXPECT_THAT(
      out, ElementsAreArray(quantized({std::exp(1.0) / sum, 1.0 / sum, std::exp(-1.0) / sum}, 7)));
}

TEST(RefFloat, SoftmaxAlongAnInnerAxis) {
  // [1, 2, 2] along axis 1: columns {0, 0} and {2, 0} (fp 0) -> {0.5, 0.5} and
  // {0.8808, 0.1192}: fp 6 -> {32, 56; 32, 8}.
  GraphBuilder b("softmax");
  b.softmax("s", b.input("x", {1, 2, 2}, 0), 1, 6);
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 2, 2}, 0, {0, 2, 0, 0})),
              ElementsAre(32, 56, 32, 8));
}

TEST(RefFloat, LayerNorm) {
  // x = {1, 2, -1, 0}: mean 0.5, biased var 1.25; normalized {0.4472, 1.3416, -1.3416,
  // -0.4472}; gamma {1, 0.5, 1, 1}, beta {0, 0, 1, -0.5} -> {0.4472, 0.6708, -0.3416,
  // -0.9472}; fp 5 -> {14.31, 21.47, -10.93, -30.31} -> {14, 21, -11, -30}.
  GraphBuilder b("ln");
  auto x = b.input("x", {1, 4}, 2);
  auto gamma = b.constant("gamma", {4}, q8({64, 32, 64, 64}), 6);
  auto beta = b.constant("beta", {4}, q8({0, 0, 16, -8}), 4);
  b.layernorm("n", x, gamma, beta, 1e-5, 5);
  const auto out = run_one(b.finish(), qtensor("x_fix", {1, 4}, 2, {4, 8, -4, 0}));
  EXPECT_THAT(out, ElementsAre(14, 21, -11, -30));
  const double eps = double{1e-5f};  // the attribute is stored as float32
  const double inv = 1.0 / std::sqrt(1.25 + eps);
  EXPECT_THAT(out, ElementsAreArray(quantized(
                       {0.5 * inv, 1.5 * inv * 0.5, -1.5 * inv + 1.0, -0.5 * inv - 0.5}, 5)));
}

TEST(RefFloat, GeluErfForm) {
  // gelu(x) = x/2 (1 + erf(x / sqrt 2)): gelu(1) = 0.841345 -> 26.92 -> 27;
  // gelu(-1) = -0.158655 -> -5.08 -> -5; gelu(0) = 0; gelu(2) = 1.954500 -> 62.54 -> 63.
  GraphBuilder b("gelu");
  b.gelu("g", b.input("x", {1, 4}, 2), 5);
  const auto out = run_one(b.finish(), qtensor("x_fix", {1, 4}, 2, {4, -4, 0, 8}));
  EXPECT_THAT(out, ElementsAre(27, -5, 0, 63));
  auto gelu = [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); };
  EXPECT_THAT(out, ElementsAreArray(quantized({gelu(1), gelu(-1), gelu(0), gelu(2)}, 5)));
}

TEST(RefFloat, Sigmoid) {
  // 0.5 * 128 = 64; 0.731059 * 128 = 93.58 -> 94; 0.268941 * 128 = 34.42 -> 34.
  GraphBuilder b("sigmoid");
  b.sigmoid("s", b.input("x", {1, 3}, 0), 7);
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 3}, 0, {0, 1, -1})),
              ElementsAre(64, 94, 34));
}

TEST(RefFloat, UsesTheFixRoundMode) {
  // sigmoid(0) = 0.5 at fp 0 is a tie: DPU_ROUND -> 1, STD_ROUND -> 1, PY3_ROUND -> 0.
  for (auto [mode, expected] : {std::pair{RoundMode::Dpu, 1}, std::pair{RoundMode::Py3, 0}}) {
    GraphBuilder b("sigmoid");
    b.sigmoid("s", b.input("x", {1, 1}, 0), 0);
    Graph g = b.finish();
    g.find("s_fix")->attrs["round_mode"] = std::string(round_mode_name(mode));
    EXPECT_THAT(run_one(g, qtensor("x_fix", {1, 1}, 0, {0})), ElementsAre(expected));
  }
}

}  // namespace
}  // namespace dpushard
