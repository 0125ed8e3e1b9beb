// window_of on the real xmodels: every conv and pool window of the quantizer's ResNet-20 and
// of the two compiled files (their `-fix` ops included) decodes, and reproduces the output
// extent the file itself records, by XIR's formulas for each pad_mode.

#include <gtest/gtest.h>

#include "dpushard/graph/window.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

bool has_window(const std::string& type) {
  for (const char* t : {"conv2d", "depthwise-conv2d", "maxpool2d", "avgpool2d", "conv2d-fix",
                        "depthwise-conv2d-fix", "pool-fix"})
    if (type == t) return true;
  return false;
}

// XIR's output extent of one spatial dimension (built_in_ops.cpp, the pool and conv docs).
std::int64_t extent(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d,
                    std::int64_t pad, const std::string& mode) {
  const std::int64_t span = d * (k - 1) + 1;
  if (mode == "SAME") return (in + s - 1) / s;
  if (mode == "VALID") return (in - span + s) / s;
  if (mode == "CEIL") return (in + pad - span + s - 1) / s + 1;
  return (in + pad - span) / s + 1;
}

int check_windows(const std::string& file) {
  const Graph graph = read_xmodel(testing::fixture(file));
  int checked = 0;
  for (const Op& op : graph.ops()) {
    if (!has_window(op.type)) continue;
    SCOPED_TRACE(file + ": " + op.name + " (" + op.type + ")");
    const Op& input = graph.op(op.producers("input").at(0));
    const auto& in = input.output.shape;
    const auto& out = op.output.shape;
    EXPECT_EQ(in.size(), 4u);
    EXPECT_EQ(out.size(), 4u);
    if (in.size() != 4 || out.size() != 4) continue;
    const Window w = window_of(op).over(in[1], in[2]);
    EXPECT_EQ(out[1], extent(in[1], w.kernel_h, w.stride_h, w.dilation_h, w.pad_top + w.pad_bottom,
                             w.pad_mode));
    EXPECT_EQ(out[2], extent(in[2], w.kernel_w, w.stride_w, w.dilation_w, w.pad_left + w.pad_right,
                             w.pad_mode));
    ++checked;
  }
  return checked;
}

TEST(WindowOnRealFiles, EveryConvAndPoolWindowGivesTheRecordedOutput) {
  DPUSHARD_REQUIRE_FIXTURES();
  // ResNet-20 has 19 convs and a global average pool plus the fc as a conv; the counts
  // guard against a file read without its windows.
  EXPECT_GE(check_windows(testing::kResNetInt), 20);
  EXPECT_GE(check_windows(testing::kResNetVck190), 20);
  EXPECT_GE(check_windows(testing::kMobileNetKv260), 20);
}

}  // namespace
}  // namespace dpushard
