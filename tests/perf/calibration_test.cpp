// The calibration point (docs/perf.md): torchvision ResNet-50 at 224x224 on the KV260,
// 89.34 fps with several threads and 85.51 fps with one (Vitis AI 3.0 Model Zoo,
// pt_resnet50). Recomputed from the shipped target file, so a change to the model or the
// file that breaks the calibration fails here.

#include <gtest/gtest.h>

#include <iostream>

#include "dpushard/graph/cost.hpp"
#include "dpushard/perf/perf.hpp"
#include "perf/resnets.hpp"

namespace dpushard {
namespace {

constexpr double kMultiThreadFps = 89.34;
constexpr double kOneThreadFps = 85.51;

const Target& shipped_target() {
  static const Target t = load_target(DPUSHARD_SOURCE_DIR "/targets/kv260_b4096.yaml");
  return t;
}

const Graph& resnet50() {
  static const Graph g = testing::make_resnet50();
  return g;
}

TEST(Calibration, ResNet50HasTorchvisionShape) {
  const GraphCost cost = graph_cost(resnet50());
  // torchvision: 25,557,032 parameters, of which batch norms hold 2 x 26,560; folded into
  // the convs they leave one bias per channel. 4.09 GMACs; the Model Zoo lists 8.2 GOPs.
  EXPECT_EQ(cost.params, 25'557'032 - 26'560);
  EXPECT_NEAR(2.0 * static_cast<double>(cost.macs), 8.2e9, 0.05e9);
}

TEST(Calibration, ResNet50ReproducesTheModelZooFps) {
  const Prediction p = predict(resnet50(), shipped_target());
  std::cout << "resnet50: " << p.fps << " fps (several threads), " << 1000.0 / p.latency_ms
            << " fps (one thread), dpu " << p.dpu_ms << " ms, efficiency "
            << shipped_target().compute_efficiency << "\n";
  EXPECT_EQ(p.dpu_subgraphs, 1);
  EXPECT_EQ(p.cpu_subgraphs, 0);
  EXPECT_NEAR(p.fps, kMultiThreadFps, 0.02 * kMultiThreadFps);
  EXPECT_NEAR(1000.0 / p.latency_ms, kOneThreadFps, 0.02 * kOneThreadFps);
  EXPECT_DOUBLE_EQ(p.dpu_share, 1.0);
}

TEST(Calibration, ProcedureGivesTheShippedEfficiency) {
  const double eff = calibrate_compute_efficiency(resnet50(), shipped_target(), kMultiThreadFps);
  std::cout << "calibrated compute_efficiency: " << eff << "\n";
  EXPECT_NEAR(eff, shipped_target().compute_efficiency, 0.005);
}

// The one-thread gap is the host's whole work on a ResNet-50 frame as the Model Zoo runs it
// (float image in, float scores out: local io); host.per_frame_us is what remains of it
// after the modeled copies and float conversions.
TEST(Calibration, HostTimeIsTheOneThreadGap) {
  const double gap_ms = 1000.0 / kOneThreadFps - 1000.0 / kMultiThreadFps;
  const Prediction p = predict(resnet50(), shipped_target());
  EXPECT_NEAR(p.host_ms, gap_ms, 0.002);
  EXPECT_EQ(p.input_bytes, 224 * 224 * 3);
  EXPECT_EQ(p.output_bytes, 1000);
  EXPECT_DOUBLE_EQ(p.net_ms, 0.0);
}

TEST(Calibration, BuiltInTargetIsTheShippedFile) {
  const Target built_in = builtin_target("kv260");
  const Target& file = shipped_target();
  EXPECT_EQ(built_in.name, file.name);
  EXPECT_DOUBLE_EQ(built_in.compute_efficiency, file.compute_efficiency);
  EXPECT_DOUBLE_EQ(built_in.per_frame_us, file.per_frame_us);
  EXPECT_DOUBLE_EQ(built_in.ddr_efficiency, file.ddr_efficiency);
  EXPECT_EQ(built_in.cpu_ops, file.cpu_ops);
}

}  // namespace
}  // namespace dpushard
