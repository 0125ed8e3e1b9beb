// concat and the layout ops in the ref backend.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ref_test_util.hpp"

namespace dpushard {
namespace {

using ::testing::ElementsAre;
using testing::ints;
using testing::qtensor;
using testing::run_ref;

TEST(RefConcat, RescalesEachInputToTheOutputFixPoint) {
  // a fp 2 {5, -5} -> fp 1: 2.5 -> 3, -2.5 -> -2; b fp 0 {100} -> 200 -> 127; c fp 1 {-3}.
  GraphBuilder b("cat");
  auto a = b.input("a", {1, 1, 1, 2}, 2);
  auto c = b.input("b", {1, 1, 1, 1}, 0);
  auto d = b.input("c", {1, 1, 1, 1}, 1);
  b.concat("k", {a, c, d}, 3, 1);
  const auto out = run_ref(b.finish(), {qtensor("a_fix", {1, 1, 1, 2}, 2, {5, -5}),
                                        qtensor("b_fix", {1, 1, 1, 1}, 0, {100}),
                                        qtensor("c_fix", {1, 1, 1, 1}, 1, {-3})});
  EXPECT_THAT(ints(out.at(0)), ElementsAre(3, -2, 127, -3));
  EXPECT_EQ(out.at(0).shape, (std::vector<std::int64_t>{1, 1, 1, 4}));
}

TEST(RefConcat, AlongAnOuterAxis) {
  // [1, 1, 2, 1] and [1, 2, 2, 1] along H: rows of a then rows of b, same fix point.
  GraphBuilder b("cat");
  auto a = b.input("a", {1, 1, 2, 1}, 0);
  auto c = b.input("b", {1, 2, 2, 1}, 0);
  b.concat("k", {a, c}, 1, 0);
  const auto out = run_ref(b.finish(), {qtensor("a_fix", {1, 1, 2, 1}, 0, {1, 2}),
                                        qtensor("b_fix", {1, 2, 2, 1}, 0, {3, 4, 5, 6})});
  EXPECT_THAT(ints(out.at(0)), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(RefLayout, TransposeReshapeFlattenKeepTheFixPoint) {
  GraphBuilder b("layout");
  auto x = b.input("x", {1, 2, 3}, 1);
  b.transpose("t", x, {0, 2, 1});
  b.reshape("r", x, {3, 2});
  auto y = b.input("y", {1, 2, 2, 2}, 3);
  b.flatten("f", y, 1, 3);
  const auto out =
      run_ref(b.finish(), {qtensor("x_fix", {1, 2, 3}, 1, {0, 1, 2, 3, 4, 5}),
                           qtensor("y_fix", {1, 2, 2, 2}, 3, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_EQ(out.size(), 3u);
  // {0, 1, 2; 3, 4, 5} transposed: {0, 3; 1, 4; 2, 5}.
  EXPECT_THAT(ints(out[0]), ElementsAre(0, 3, 1, 4, 2, 5));
  EXPECT_EQ(out[0].shape, (std::vector<std::int64_t>{1, 3, 2}));
  EXPECT_EQ(out[0].fix_point, 1);
  EXPECT_THAT(ints(out[1]), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(out[1].shape, (std::vector<std::int64_t>{3, 2}));
  EXPECT_THAT(ints(out[2]), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  EXPECT_EQ(out[2].shape, (std::vector<std::int64_t>{1, 8}));
  EXPECT_EQ(out[2].fix_point, 3);
}

}  // namespace
}  // namespace dpushard
