// maxpool2d / avgpool2d in the ref backend, against values worked out by hand.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ref_test_util.hpp"

namespace dpushard {
namespace {

using testing::add_fix;
using testing::add_op;
using testing::add_raw_const;
using ::testing::ElementsAre;
using testing::qtensor;
using testing::run_one;

TEST(RefAvgPool, ThreeByThreeUsesSevenOver64) {
  // Channel 0 = 1..9 (sum 45), channel 1 = -1..-9 (sum -45), channel 2 = {-8, 0, ...}
  // (sum -8). fp_in 0, fp_out 2: out = DPU_ROUND(sum * 7 / 2^(6 + 0 - 2)).
  GraphBuilder b("avg");
  Pool2dSpec spec;
  spec.kernel = {3, 3};
  spec.stride = {1, 1};
  b.avgpool2d("p", b.input("x", {1, 3, 3, 3}, 0), spec, 2);
  std::vector<int> in;
  for (int i = 1; i <= 9; ++i) {
    in.push_back(i);
    in.push_back(-i);
    in.push_back(i == 1 ? -8 : 0);
  }
  // 315 / 16 = 19.6875 -> 20; -19.6875 -> -20; -56 / 16 = -3.5 -> -3.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 3, 3, 3}, 0, in)), ElementsAre(20, -20, -3));
}

TEST(RefAvgPool, GlobalSevenBySevenUses21Over1024) {
  // 49 values of 10 (sum 490) and of -3 (sum -147); fp_out 3: shift 10 - 3 = 7.
  GraphBuilder b("avg");
  Pool2dSpec spec;
  spec.global = true;
  b.avgpool2d("p", b.input("x", {1, 7, 7, 2}, 0), spec, 3);
  std::vector<int> in;
  for (int i = 0; i < 49; ++i) {
    in.push_back(10);
    in.push_back(-3);
  }
  // 490 * 21 = 10290 / 128 = 80.39 -> 80; -147 * 21 = -3087 / 128 = -24.12 -> -24.
  EXPECT_THAT(run_one(b.finish(), qtensor("x_fix", {1, 7, 7, 2}, 0, in)), ElementsAre(80, -24));
}

// avgpool2d(3x3 global) -> mul(const c) -> fix(2), built by hand like the quantizer does.
Graph corrected_avgpool(float c) {
  GraphBuilder b("avgmul");
  auto x = b.input("x", {1, 3, 3, 1}, 0);
  Graph g = b.finish();
  add_op(g, "p", "avgpool2d", {{"input", {x.op}}},
         {{"kernel", std::vector<std::int32_t>{3, 3}},
          {"stride", std::vector<std::int32_t>{3, 3}},
          {"pad", std::vector<std::int32_t>{0, 0, 0, 0}},
          {"global", true},
          {"count_include_pad", true}},
         {1, 1, 1, 1});
  add_raw_const(g, "c", {1}, {c});
  add_op(g, "m", "mul", {{"input", {"p", "c"}}}, {}, {1, 1, 1, 1});
  add_fix(g, "m", 2);
  return g;
}

TEST(RefAvgPool, QuantizerCorrectionFoldsIntoTheFactor) {
  // Sum 44 (1..8 and 8). c = 9 * 7/64 = 0.984375 is the correction: the float graph's
  // mean * c is sum * 7/64 = 44 * 7 / 16 = 19.25 -> 19 at fp 2.
  const auto in = qtensor("x_fix", {1, 3, 3, 1}, 0, {1, 2, 3, 4, 5, 6, 7, 8, 8});
  EXPECT_THAT(run_one(corrected_avgpool(0.984375f), in), ElementsAre(19));
  // Any other constant is the float graph's mean * c: 44 / 9 * 1.0 * 4 = 19.56 -> 20.
  EXPECT_THAT(run_one(corrected_avgpool(1.0f), in), ElementsAre(20));
  // 44 / 9 * 0.5 * 4 = 9.78 -> 10.
  EXPECT_THAT(run_one(corrected_avgpool(0.5f), in), ElementsAre(10));
}

TEST(RefMaxPool, PaddingTapsAreIgnored) {
  // -1..-9 in a 3x3 grid; 2x2 windows, stride 2, pad left 1 and top 1.
  GraphBuilder b("max");
  Pool2dSpec spec;
  spec.kernel = {2, 2};
  spec.stride = {2, 2};
  spec.pad = {1, 0, 1, 0};
  b.maxpool2d("p", b.input("x", {1, 3, 3, 1}, 0), spec);
  // (0,0) sees only -1; (0,1) sees -2, -3; (1,0) -4, -7; (1,1) -5, -6, -8, -9.
  // Counting padding as 0 would give 0 everywhere.
  EXPECT_THAT(
      run_one(b.finish(), qtensor("x_fix", {1, 3, 3, 1}, 0, {-1, -2, -3, -4, -5, -6, -7, -8, -9})),
      ElementsAre(-1, -2, -4, -5));
}

TEST(RefMaxPool, RescalesWhenTheFixPointChanges) {
  GraphBuilder b("max");
  Pool2dSpec spec;
  spec.kernel = {2, 1};
  spec.stride = {2, 1};
  b.maxpool2d("p", b.input("x", {1, 2, 3, 1}, 2), spec);
  Graph g = b.finish();
  g.find("p_fix")->attrs["fix_point"] = std::int32_t{1};
  // Column maxima of {5, -3, 100; 2, -7, 90} = {5, -3, 100} at fp 2 -> fp 1:
  // 2.5 -> 3, -1.5 -> -1, 50.
  EXPECT_THAT(run_one(g, qtensor("x_fix", {1, 2, 3, 1}, 2, {5, -3, 100, 2, -7, 90})),
              ElementsAre(3, -1, 50));
}

}  // namespace
}  // namespace dpushard
