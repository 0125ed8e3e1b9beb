// The host side of a frame (the target's `host:` section) and several DPU cores in predict():
// copies, float conversions or TCP per byte on top of a fixed cost; cores multiply the
// throughput but not the latency; DDR is shared by the cores.

#include <gtest/gtest.h>

#include <vector>

#include "dpushard/graph/builder.hpp"
#include "dpushard/perf/perf.hpp"
#include "perf/resnets.hpp"

namespace dpushard {
namespace {

constexpr double kNsPerMs = 1e6;

// One 3x3 conv, 32x32x16 in, 32x32x32 out.
Graph one_conv() {
  GraphBuilder b("conv");
  const Value x = b.input("x", {1, 32, 32, 16}, 6);
  const Value w = b.constant("w", {32, 3, 3, 16}, std::vector<std::int8_t>(32 * 9 * 16, 1), 7);
  b.conv2d("conv", x, w, std::nullopt, Conv2dSpec{}, 4);
  return b.finish();
}

TEST(HostModel, LocalIoPaysCopiesAndFloatConversions) {
  const Target t = builtin_target("kv260");
  const Prediction p = predict(one_conv(), t);
  const double in = 32 * 32 * 16, out = 32 * 32 * 32;
  EXPECT_EQ(p.input_bytes, 32 * 32 * 16);
  EXPECT_EQ(p.output_bytes, 32 * 32 * 32);
  const double expected =
      t.per_frame_us / 1000 + (in * t.copy_in_ns_per_byte + out * t.copy_out_ns_per_byte +
                               (in + out) * t.requantize_ns_per_element) /
                                  kNsPerMs;
  EXPECT_NEAR(p.host_ms, expected, 1e-12);
  EXPECT_DOUBLE_EQ(p.net_ms, 0.0);
  EXPECT_DOUBLE_EQ(p.latency_ms, p.dpu_ms + p.cpu_ms + p.host_ms);
}

TEST(HostModel, NetworkIoPaysTcpInsteadOfFloatConversions) {
  const Target t = builtin_target("kv260");
  PredictOptions network;
  network.io = HostIo::Network;
  const Prediction p = predict(one_conv(), t, network);
  const double in = 32 * 32 * 16, out = 32 * 32 * 32;
  EXPECT_NEAR(p.host_ms,
              t.per_frame_us / 1000 +
                  (in * t.copy_in_ns_per_byte + out * t.copy_out_ns_per_byte) / kNsPerMs,
              1e-12);
  EXPECT_NEAR(p.net_ms, (in * t.tcp_recv_ns_per_byte + out * t.tcp_send_ns_per_byte) / kNsPerMs,
              1e-12);
  EXPECT_DOUBLE_EQ(p.latency_ms, p.dpu_ms + p.cpu_ms + p.host_ms + p.net_ms);
  // The worker's io thread moves tensors while the compute thread works.
  EXPECT_DOUBLE_EQ(p.worker_ms, std::max(p.dpu_ms + p.cpu_ms + p.host_ms, p.net_ms));
  EXPECT_DOUBLE_EQ(predict_fragment_ms(one_conv(), t), p.worker_ms);
}

TEST(HostModel, EveryHostFieldCounts) {
  const Target base = builtin_target("kv260");
  PredictOptions network;
  network.io = HostIo::Network;
  const Prediction local0 = predict(one_conv(), base);
  const Prediction net0 = predict(one_conv(), base, network);
  for (double Target::*field : {&Target::per_frame_us, &Target::copy_in_ns_per_byte,
                                &Target::copy_out_ns_per_byte, &Target::requantize_ns_per_element,
                                &Target::tcp_recv_ns_per_byte, &Target::tcp_send_ns_per_byte}) {
    Target t = base;
    t.*field += 10;
    const Prediction local = predict(one_conv(), t);
    const Prediction net = predict(one_conv(), t, network);
    EXPECT_GT(local.latency_ms + net.latency_ms, local0.latency_ms + net0.latency_ms);
  }
}

// The host bound: a frame whose A53 work exceeds 4 x its DPU time is limited by the A53.
TEST(HostModel, SteadyStateIsTheBusiestResource) {
  Target t = builtin_target("kv260");
  t.per_frame_us = 100'000;  // 100 ms of host work per frame
  const Prediction p = predict(one_conv(), t);
  EXPECT_NEAR(p.frame_ms, (p.cpu_ms + p.host_ms) / static_cast<double>(t.host_cores), 1e-12);
  t.tcp_recv_ns_per_byte = 1e6;  // 16 KB in: 16 s on the network thread
  PredictOptions network;
  network.io = HostIo::Network;
  const Prediction n = predict(one_conv(), t, network);
  EXPECT_DOUBLE_EQ(n.frame_ms, n.net_ms);
  EXPECT_DOUBLE_EQ(n.worker_ms, n.net_ms);
}

TEST(DpuCores, ThroughputScalesWithCoresLatencyDoesNot) {
  const Graph resnet = testing::make_resnet18();
  Target one = builtin_target("kv260");
  one.ddr_bandwidth_gbps = 1000;  // keep DDR out of the way
  Target three = one;
  three.dpu_cores = 3;
  const Prediction p1 = predict(resnet, one);
  const Prediction p3 = predict(resnet, three);
  EXPECT_EQ(p3.dpu_cores, 3);
  EXPECT_DOUBLE_EQ(p3.latency_ms, p1.latency_ms);
  EXPECT_DOUBLE_EQ(p3.dpu_ms, p1.dpu_ms);
  EXPECT_DOUBLE_EQ(p1.frame_ms, p1.dpu_ms);
  EXPECT_DOUBLE_EQ(p3.frame_ms, p1.dpu_ms / 3);
  EXPECT_NEAR(p3.fps, 3 * p1.fps, 1e-9 * p1.fps);
  // A worker runs one frame at a time: the cores do not shorten it.
  EXPECT_DOUBLE_EQ(p3.worker_ms, p1.worker_ms);
}

TEST(DpuCores, SharedDdrBoundsSeveralCores) {
  const Graph resnet = testing::make_resnet50();
  Target t = builtin_target("kv260");
  t.dpu_cores = 16;
  const Prediction p = predict(resnet, t);
  const double ddr_ms =
      static_cast<double>(p.ddr_bytes) / (t.ddr_bandwidth_gbps * 1e6 * t.ddr_efficiency);
  EXPECT_DOUBLE_EQ(p.frame_ms, ddr_ms);
  EXPECT_GT(p.frame_ms, p.dpu_ms / 16);
}

// The ZCU102's three cores at 281 MHz: ResNet-50's one-frame latency grows by the clock
// ratio (plus the slower A53), its throughput by up to the core count, bounded by DDR.
TEST(DpuCores, Zcu102AgainstKv260) {
  const Graph resnet = testing::make_resnet50();
  const Prediction kv = predict(resnet, builtin_target("kv260"));
  const Prediction zcu = predict(resnet, builtin_target("zcu102"));
  EXPECT_NEAR(zcu.dpu_ms / kv.dpu_ms, 300.0 / 281.0, 0.01);
  EXPECT_GT(zcu.latency_ms, kv.latency_ms);
  EXPECT_GT(zcu.fps, 1.5 * kv.fps);
  EXPECT_LE(zcu.fps, 3 * kv.fps * 281.0 / 300.0 + 1e-9);
}

}  // namespace
}  // namespace dpushard

namespace dpushard {
namespace {

// conv -> `activation` (a raw op, as the importer's quantizer writes it) -> fix.
Graph conv_then(const std::string& activation) {
  GraphBuilder b("act");
  const Value x = b.input("x", {1, 16, 16, 16}, 6);
  const Value w = b.constant("w", {16, 3, 3, 16}, std::vector<std::int8_t>(16 * 9 * 16, 1), 7);
  const Value c = b.conv2d("conv", x, w, std::nullopt, Conv2dSpec{}, 4);
  Op act;
  act.name = "act";
  act.type = activation;
  act.args = {{"input", {c.op}}};
  act.output.name = "act";
  act.output.shape = c.shape;
  b.graph().add_op(std::move(act));
  b.fix("act_fix", {"act", c.shape, 7}, 7);
  return b.finish();
}

// Vitis AI's placement of the sigmoid family on the DPUCZDX8G (docs/import.md): sigmoid
// and tanh are CPU-only; hard-sigmoid and hard-swish run on the DPU's ALU, as ops of their
// own (the DPUCZDX8G's conv engine fuses only ReLU, ReLU6 and LeakyReLU: PG338).
TEST(SigmoidFamily, SigmoidOnTheCpuHardFormsOnTheDpu) {
  const Target t = builtin_target("kv260");
  for (const std::string type : {"sigmoid", "tanh"}) {
    const Prediction p = predict(conv_then(type), t);
    EXPECT_EQ(p.cpu_subgraphs, 1) << type;
    bool on_cpu = false;
    for (const auto& op : p.ops) on_cpu |= op.op == "act" && op.engine == Device::Cpu;
    EXPECT_TRUE(on_cpu) << type;
  }
  for (const std::string type : {"hard-sigmoid", "hard-swish"}) {
    const Prediction p = predict(conv_then(type), t);
    EXPECT_EQ(p.cpu_subgraphs, 0) << type;
    EXPECT_EQ(p.dpu_subgraphs, 1) << type;
    EXPECT_DOUBLE_EQ(p.cpu_ms, 0.0) << type;
    bool on_dpu = false;
    for (const auto& op : p.ops) on_dpu |= op.op == "act" && op.engine == Device::Dpu;
    EXPECT_TRUE(on_dpu) << type << ": an ALU op of its own";
  }
}

}  // namespace
}  // namespace dpushard
