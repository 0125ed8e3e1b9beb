// window_of: XIR's attribute order and defaults, and one error line for each way a window
// attribute can be wrong. The real files are covered by tests/xmodel/window_fixture_test.cpp.

#include <gtest/gtest.h>

#include "dpushard/graph/window.hpp"

namespace dpushard {
namespace {

Op window_op(const std::string& type, AttrMap attrs) {
  Op op;
  op.name = "w";
  op.type = type;
  op.attrs = std::move(attrs);
  return op;
}

using I32 = std::vector<std::int32_t>;

std::string error_of(const Op& op) {
  try {
    window_of(op);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Window, ReadsXirOrderWidthFirstAndPadLeftRightTopBottom) {
  const Window w = window_of(window_op("conv2d", {{"kernel", I32{3, 5}},
                                                  {"stride", I32{1, 2}},
                                                  {"dilation", I32{2, 4}},
                                                  {"pad", I32{1, 2, 3, 4}},
                                                  {"pad_mode", std::string("CEIL")}}));
  EXPECT_EQ(w.kernel_w, 3);
  EXPECT_EQ(w.kernel_h, 5);
  EXPECT_EQ(w.stride_w, 1);
  EXPECT_EQ(w.stride_h, 2);
  EXPECT_EQ(w.dilation_w, 2);
  EXPECT_EQ(w.dilation_h, 4);
  EXPECT_EQ(w.pad_left, 1);
  EXPECT_EQ(w.pad_right, 2);
  EXPECT_EQ(w.pad_top, 3);
  EXPECT_EQ(w.pad_bottom, 4);
  EXPECT_EQ(w.pad_mode, "CEIL");
  EXPECT_FALSE(w.global);
}

TEST(Window, OptionalAttributesTakeXirDefaults) {
  const Window w =
      window_of(window_op("maxpool2d", {{"kernel", I32{2, 2}}, {"stride", I32{2, 2}}}));
  EXPECT_EQ(w.dilation_h, 1);
  EXPECT_EQ(w.dilation_w, 1);
  EXPECT_EQ(w.pad_left + w.pad_right + w.pad_top + w.pad_bottom, 0);
  EXPECT_EQ(w.pad_mode, "FLOOR");
  EXPECT_FALSE(w.global);
}

// The defect this decoder removed: a pool without a stride was run with stride = kernel by
// the ref and cpu kernels but given stride 1 by shape inference, the quantizer and the timing
// model. XIR requires the attribute, so every reader now refuses the op in the same words.
TEST(Window, APoolWithoutStrideIsRefusedNotGuessed) {
  EXPECT_EQ(error_of(window_op("maxpool2d", {{"kernel", I32{2, 2}}})),
            "op 'w' (maxpool2d): missing attribute 'stride' (XIR requires it)");
  EXPECT_EQ(error_of(window_op("conv2d", {{"stride", I32{1, 1}}})),
            "op 'w' (conv2d): missing attribute 'kernel' (XIR requires it)");
}

TEST(Window, BadValuesAreOneLineNamingTheAttribute) {
  EXPECT_EQ(error_of(window_op("conv2d", {{"kernel", I32{3}}, {"stride", I32{1, 1}}})),
            "op 'w' (conv2d): attribute 'kernel' must be two integers >= 1 {width, height}");
  EXPECT_EQ(error_of(window_op("conv2d", {{"kernel", I32{3, 3}}, {"stride", I32{0, 1}}})),
            "op 'w' (conv2d): attribute 'stride' must be two integers >= 1 {width, height}");
  EXPECT_EQ(error_of(window_op(
                "conv2d", {{"kernel", I32{3, 3}}, {"stride", I32{1, 1}}, {"dilation", I32{1, 0}}})),
            "op 'w' (conv2d): attribute 'dilation' must be two integers >= 1 {width, height}");
  EXPECT_EQ(
      error_of(window_op(
          "conv2d", {{"kernel", I32{3, 3}}, {"stride", I32{1, 1}}, {"pad", I32{1, 1, -1, 0}}})),
      "op 'w' (conv2d): attribute 'pad' must be four integers >= 0 {left, right, top, "
      "bottom}");
  EXPECT_EQ(error_of(window_op(
                "avgpool2d",
                {{"kernel", I32{3, 3}}, {"stride", I32{1, 1}}, {"pad_mode", std::string("HALF")}})),
            "op 'w' (avgpool2d): pad_mode 'HALF' is none of FLOOR, CEIL, SAME, VALID");
  EXPECT_EQ(error_of(window_op("conv2d", {{"kernel", std::string("3x3")}, {"stride", I32{1, 1}}})),
            "op 'w' (conv2d): attribute 'kernel' has kind string, expected an integer vector");
}

TEST(Window, AGlobalPoolCoversItsInput) {
  const Window w = window_of(window_op("avgpool2d", {{"global", true}}));
  EXPECT_TRUE(w.global);
  const Window over = w.over(7, 5);
  EXPECT_EQ(over.kernel_h, 7);
  EXPECT_EQ(over.kernel_w, 5);
  EXPECT_EQ(over.stride_h, 7);
  EXPECT_EQ(over.stride_w, 5);
  // A window that is not global is the same on any input.
  const Window plain =
      window_of(window_op("maxpool2d", {{"kernel", I32{2, 2}}, {"stride", I32{2, 2}}}));
  EXPECT_EQ(plain.over(7, 5).kernel_h, 2);
  EXPECT_EQ(plain.over(7, 5).stride_w, 2);
}

}  // namespace
}  // namespace dpushard
