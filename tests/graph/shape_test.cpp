#include <gtest/gtest.h>

#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/shape.hpp"

namespace dpushard {
namespace {

std::vector<std::int8_t> ones(std::int64_t n) {
  return std::vector<std::int8_t>(static_cast<std::size_t>(n), 1);
}

TEST(Shape, ConvStridePadDilation) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 32, 30, 8}, 4);
  auto w = b.constant("w", {16, 3, 3, 8}, ones(16 * 9 * 8), 7);
  Conv2dSpec spec;
  spec.stride = {2, 2};
  spec.pad = {1, 1, 1, 1};
  EXPECT_EQ(b.conv2d("c1", x, w, std::nullopt, spec, 4).shape,
            (std::vector<std::int64_t>{1, 16, 15, 16}));
  spec.stride = {1, 1};
  spec.dilation = {2, 2};
  spec.pad = {0, 0, 0, 0};
  EXPECT_EQ(b.conv2d("c2", x, w, std::nullopt, spec, 4).shape,
            (std::vector<std::int64_t>{1, 28, 26, 16}));
  // Asymmetric padding: width gets 1+0, height 0+2.
  spec.dilation = {1, 1};
  spec.pad = {1, 0, 0, 2};
  EXPECT_EQ(b.conv2d("c3", x, w, std::nullopt, spec, 4).shape,
            (std::vector<std::int64_t>{1, 32, 29, 16}));
}

TEST(Shape, GroupedAndDepthwise) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 8, 8, 16}, 4);
  auto wg = b.constant("wg", {32, 1, 1, 4}, ones(32 * 4), 7);
  Conv2dSpec spec;
  spec.kernel = {1, 1};
  spec.pad = {0, 0, 0, 0};
  spec.group = 4;
  EXPECT_EQ(b.conv2d("g4", x, wg, std::nullopt, spec, 4).shape,
            (std::vector<std::int64_t>{1, 8, 8, 32}));
  spec.group = 2;  // 4 * 2 != 16 input channels
  EXPECT_THROW(b.conv2d("bad", x, wg, std::nullopt, spec, 4), Error);
  auto wd = b.constant("wd", {1, 3, 3, 16}, ones(9 * 16), 7);
  Conv2dSpec dw;
  EXPECT_EQ(b.depthwise_conv2d("dw", x, wd, std::nullopt, dw, 4).shape,
            (std::vector<std::int64_t>{1, 8, 8, 16}));
}

TEST(Shape, PoolsConcatMatmulLayout) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 7, 7, 8}, 4);
  Pool2dSpec pool;
  pool.kernel = {3, 3};
  pool.stride = {2, 2};
  pool.pad = {1, 1, 1, 1};
  EXPECT_EQ(b.maxpool2d("mp", x, pool).shape, (std::vector<std::int64_t>{1, 4, 4, 8}));
  Pool2dSpec global;
  global.global = true;
  auto gp = b.avgpool2d("gap", x, global, 4);
  EXPECT_EQ(gp.shape, (std::vector<std::int64_t>{1, 1, 1, 8}));
  EXPECT_EQ(b.concat("cat", {x, x}, 3, 4).shape, (std::vector<std::int64_t>{1, 7, 7, 16}));
  auto flat = b.flatten("flat", gp, 1, -1);
  EXPECT_EQ(flat.shape, (std::vector<std::int64_t>{1, 8}));
  EXPECT_EQ(flat.fix_point, 4);
  auto w = b.constant("fc_w", {10, 8}, ones(80), 7);
  EXPECT_EQ(b.matmul("fc", flat, w, std::nullopt, true, 3).shape,
            (std::vector<std::int64_t>{1, 10}));
  auto r = b.reshape("r", x, {1, -1, 8});
  EXPECT_EQ(r.shape, (std::vector<std::int64_t>{1, 49, 8}));
  EXPECT_EQ(b.transpose("t", r, {0, 2, 1}).shape, (std::vector<std::int64_t>{1, 8, 49}));
  EXPECT_THROW(b.reshape("r2", x, {1, 50, -1}), Error);
  EXPECT_THROW(b.concat("cat2", {x, flat}, 3, 4), Error);
  EXPECT_NO_THROW(b.finish());
}

TEST(Shape, ValidateCatchesStoredShapeMismatchAndBadFix) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 4, 4, 2}, 4);
  b.relu("r", x, 4);
  Graph g = b.finish();
  Graph broken = g;
  broken.find("r")->output.shape = {1, 4, 4, 3};
  try {
    validate(broken);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'r'"), std::string::npos) << e.what();
  }
  Graph badfix = g;
  badfix.find("r_fix")->attrs["bit_width"] = std::int32_t{16};
  EXPECT_THROW(validate(badfix), Error);
  Graph unknown = g;
  unknown.find("r")->type = "frobnicate";
  try {
    validate(unknown);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("frobnicate"), std::string::npos) << e.what();
  }
}

TEST(Shape, InferShapesFillsMissingShapes) {
  GraphBuilder b("g");
  auto x = b.input("x", {1, 4, 4, 2}, 4);
  b.relu("r", x, 4);
  Graph g = b.finish();
  for (auto& op : g.mutable_ops()) op.output.shape.clear();
  infer_shapes(g);
  EXPECT_EQ(g.op("r_fix").output.shape, (std::vector<std::int64_t>{1, 4, 4, 2}));
}

TEST(Shape, TextAndElementCount) {
  EXPECT_EQ(shape_text({1, 224, 224, 3}), "[1,224,224,3]");
  EXPECT_EQ(shape_text({7}), "[7]");
  EXPECT_EQ(shape_text({}), "[]");
  EXPECT_EQ(element_count({1, 224, 224, 3}), 150528);
  EXPECT_EQ(element_count({}), 1);  // a scalar
  EXPECT_EQ(element_count({4, 0, 2}), 0);
}

}  // namespace
}  // namespace dpushard
