// The real fixtures: the compiled MobileNetV2 for the KV260 (the compiler's own per-op
// workload_on_arch checks the padding formulas exactly), and the ResNet-20 files.

#include <gtest/gtest.h>

#include <iostream>

#include "dpushard/perf/perf.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

const Graph& mobilenet() {
  static const Graph g = read_xmodel(testing::fixture(testing::kMobileNetKv260));
  return g;
}

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

TEST(MobileNetV2Fixture, PredictedWithinAPlausibleRange) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Prediction p = predict(mobilenet(), builtin_target("kv260"));
  std::cout << "mobilenetv2 (compiled, kv260): " << p.fps << " fps, dpu " << p.dpu_ms
            << " ms, one thread " << 1000.0 / p.latency_ms << " fps\n";
  // 0.3 GMACs on a 0.6 TMAC/s engine with depthwise layers at 1/16 of the peak: hundreds
  // of frames per second, neither tens nor thousands.
  EXPECT_GT(p.fps, 150.0);
  EXPECT_LT(p.fps, 1500.0);
  EXPECT_EQ(p.dpu_subgraphs, 1);
  for (const auto& t : p.ops) EXPECT_EQ(t.engine, Device::Dpu) << t.op;  // as compiled
  EXPECT_GT(p.dpu_share, 0.95);
}

TEST(MobileNetV2Fixture, MacsMatchTheCompilersWorkload) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Prediction p = predict(mobilenet(), builtin_target("kv260"));
  // workload = 2 x MACs + one add per output (the bias): within 2 %.
  const std::int64_t workload = int_attr(mobilenet().root()->attrs, "workload", -1);
  ASSERT_GT(workload, 0);
  EXPECT_NEAR(static_cast<double>(2 * p.macs) / static_cast<double>(workload), 1.0, 0.02);
}

// The compiler records per op the work it schedules on this arch, padding included: for
// convs 2 x padded MACs + padded outputs (the bias), for eltwise and pools the padded lane
// work. The model's padding (channels to 16, widths to 8 on the conv engine and to 4 on
// the ALU) must match it exactly, op by op.
TEST(MobileNetV2Fixture, PaddedWorkMatchesWorkloadOnArchOpByOp) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Target t = builtin_target("kv260");
  int checked = 0;
  for (const Op& op : mobilenet().ops()) {
    const bool conv = op.type == "conv2d-fix";
    const bool depthwise = op.type == "depthwise-conv2d-fix";
    if (!conv && !depthwise && op.type != "eltwise-fix" && op.type != "pool-fix") continue;
    const std::int64_t on_arch = int_attr(op.attrs, "workload_on_arch", -1);
    ASSERT_GT(on_arch, 0) << op.name;
    const auto timing = time_op(mobilenet(), op, t);
    ASSERT_TRUE(timing.has_value()) << op.name;
    const auto& s = op.output.shape;
    const std::int64_t pixels = conv ? t.pixel_parallelism : t.alu_pixel_parallelism;
    const std::int64_t padded_outputs =
        s[0] * s[1] * round_up(s[2], pixels) * round_up(s[3], t.output_channel_parallelism);
    if (conv || depthwise)
      EXPECT_EQ(2 * timing->padded_macs + padded_outputs, on_arch) << op.name;
    else
      EXPECT_EQ(timing->padded_macs, on_arch) << op.name;
    ++checked;
  }
  EXPECT_EQ(checked, 36 + 17 + 10 + 1);
}

TEST(ResNet20Fixtures, IntAndCompiledFilesPredict) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Target t = builtin_target("kv260");
  const Prediction p_int = predict(read_xmodel(testing::fixture(testing::kResNetInt)), t);
  const Prediction p_vck = predict(read_xmodel(testing::fixture(testing::kResNetVck190)), t);
  EXPECT_GT(p_int.fps, 0);
  EXPECT_EQ(p_int.dpu_subgraphs, 1);
  EXPECT_EQ(p_int.cpu_subgraphs, 0);
  // Same network: the same MACs from the `_int` ops and from the compiled `*-fix` ops.
  EXPECT_EQ(p_int.macs, p_vck.macs);
  EXPECT_GT(p_int.macs, 40'000'000);  // ResNet-20 on CIFAR: about 41M MACs
  EXPECT_LT(p_int.macs, 42'000'000);
}

}  // namespace
}  // namespace dpushard
