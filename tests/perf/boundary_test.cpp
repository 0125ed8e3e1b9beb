// The boundary rule (VITIS_AI.md section 4): a fragment whose output is not produced by a
// fix op has its trailing convs on the CPU, priced at the DPU time times the slowdown, and
// the other ops after its last fixes (an add, a relu) on the CPU at the CPU's rate.
// And the subgraph count: every DPU or CPU subgraph costs a launch per frame.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/builder.hpp"
#include "dpushard/perf/perf.hpp"

namespace dpushard {
namespace {

std::vector<std::int8_t> ones(std::int64_t n) {
  return std::vector<std::int8_t>(static_cast<std::size_t>(n), 1);
}

Value conv3x3(GraphBuilder& b, const std::string& name, const Value& x, std::int64_t oc) {
  const std::int64_t ic = x.shape.back();
  const Value w = b.constant(name + "_w", {oc, 3, 3, ic}, ones(oc * 9 * ic), 7);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::Relu;
  return b.conv2d(name, x, w, std::nullopt, spec, 4);
}

// x -> conv1 -> fix -> conv2 -> relu -> fix, with the final fix optionally removed (the
// --no-output-fix fragment ends at the relu).
Graph two_convs(bool output_fix) {
  GraphBuilder b("fragment");
  const Value x = b.input("x", {1, 28, 28, 32}, 6);
  const Value h = conv3x3(b, "conv1", x, 64);
  conv3x3(b, "conv2", h, 64);
  Graph g = b.finish();
  if (!output_fix) g.remove_op("conv2_fix");
  return g;
}

const OpTiming& timing(const Prediction& p, const std::string& op) {
  for (const auto& t : p.ops)
    if (t.op == op) return t;
  ADD_FAILURE() << "no timing for " << op;
  static const OpTiming none;
  return none;
}

TEST(Boundary, FixedOutputKeepsEveryConvOnTheDpu) {
  const Prediction p = predict(two_convs(true), builtin_target("kv260"));
  for (const auto& t : p.ops) EXPECT_EQ(t.engine, Device::Dpu) << t.op;
  EXPECT_EQ(p.dpu_subgraphs, 1);
  EXPECT_EQ(p.cpu_subgraphs, 0);
}

TEST(Boundary, UnfixedOutputMovesTheTrailingConvToTheCpu) {
  const Target t = builtin_target("kv260");
  const Prediction fixed = predict(two_convs(true), t);
  const Prediction naive = predict(two_convs(false), t);
  EXPECT_EQ(timing(naive, "conv1").engine, Device::Dpu);
  const OpTiming& conv2 = timing(naive, "conv2");
  EXPECT_EQ(conv2.engine, Device::Cpu);
  EXPECT_NE(conv2.cpu_reason.find("fix"), std::string::npos) << conv2.cpu_reason;
  EXPECT_NEAR(conv2.ms, t.boundary_slowdown * timing(fixed, "conv2").ms, 1e-12);
  EXPECT_EQ(naive.cpu_subgraphs, 1);
  EXPECT_GT(naive.dpu_ms + naive.cpu_ms, 10 * (fixed.dpu_ms + fixed.cpu_ms));
  EXPECT_LT(naive.dpu_share, 0.1);
}

// A residual block cut after its add (ResNet's usual pipeline cut) with --no-output-fix:
// no conv trails the output, but the add (and the relu after it) sit between the last
// fixes and the output, so the compiler leaves them on the CPU (the split oracle's
// output_not_fixed rule) and the prediction charges a CPU subgraph for them.
TEST(Boundary, UnfixedOutputAfterAnAddMovesTheAddToTheCpu) {
  GraphBuilder b("residual");
  const Value x = b.input("x", {1, 16, 16, 32}, 6);
  const Value h = conv3x3(b, "conv1", x, 32);
  const Value g = conv3x3(b, "conv2", h, 32);
  b.add("add", {h, g}, 4, Nonlinear::Relu);
  Graph fixed = b.finish();
  Graph naive = fixed;
  naive.remove_op("add_fix");
  const Target t = builtin_target("kv260");
  const Prediction with_fix = predict(fixed, t);
  const Prediction without = predict(naive, t);
  EXPECT_EQ(with_fix.cpu_subgraphs, 0);
  EXPECT_EQ(timing(without, "conv1").engine, Device::Dpu);
  EXPECT_EQ(timing(without, "conv2").engine, Device::Dpu);
  const OpTiming& add = timing(without, "add");
  EXPECT_EQ(add.engine, Device::Cpu);
  EXPECT_NE(add.cpu_reason.find("not produced by a fix op"), std::string::npos) << add.cpu_reason;
  EXPECT_GT(add.ms, timing(with_fix, "add").ms);
  EXPECT_EQ(without.cpu_subgraphs, 1);
  EXPECT_GT(without.dpu_ms + without.cpu_ms,
            with_fix.dpu_ms + with_fix.cpu_ms + t.per_subgraph_us / 1000);
}

TEST(Boundary, TheOracleCanCarryItsOwnFactor) {
  const Target t = builtin_target("kv260");
  PredictOptions options;
  options.boundary_slowdown = 10;
  const Prediction fixed = predict(two_convs(true), t);
  const Prediction naive = predict(two_convs(false), t, options);
  EXPECT_NEAR(timing(naive, "conv2").ms, 10 * timing(fixed, "conv2").ms, 1e-12);
  options.io = HostIo::Network;
  EXPECT_DOUBLE_EQ(predict_fragment_ms(two_convs(false), t, options),
                   predict(two_convs(false), t, options).worker_ms);
}

TEST(Boundary, LayoutOpsOverAFixAreFixedOutputs) {
  GraphBuilder b("flat");
  const Value x = b.input("x", {1, 8, 8, 16}, 6);
  const Value h = conv3x3(b, "conv", x, 16);
  b.flatten("flat", h, 1, -1);
  const Prediction p = predict(b.finish(), builtin_target("kv260"));
  EXPECT_EQ(timing(p, "conv").engine, Device::Dpu);
}

TEST(Subgraphs, ACpuOpSplitsTheDpuWork) {
  GraphBuilder b("split");
  const Value x = b.input("x", {1, 8, 8, 16}, 6);
  const Value h = conv3x3(b, "conv1", x, 16);
  const Value s = b.softmax("softmax", h, -1, 7);
  conv3x3(b, "conv2", s, 16);
  const Target t = builtin_target("kv260");
  const Prediction p = predict(b.finish(), t);
  EXPECT_EQ(p.dpu_subgraphs, 2);
  EXPECT_EQ(p.cpu_subgraphs, 1);
  double dpu_ops = 0, cpu_ops = 0;
  for (const auto& op : p.ops) (op.engine == Device::Dpu ? dpu_ops : cpu_ops) += op.ms;
  EXPECT_NEAR(p.dpu_ms, dpu_ops + 2 * t.per_subgraph_us / 1000, 1e-12);
  EXPECT_NEAR(p.cpu_ms, cpu_ops + 1 * t.per_subgraph_us / 1000, 1e-12);
  EXPECT_DOUBLE_EQ(p.latency_ms, p.dpu_ms + p.cpu_ms + p.host_ms);
  EXPECT_DOUBLE_EQ(p.worker_ms, p.latency_ms);  // local io: no TCP time
  EXPECT_DOUBLE_EQ(p.fps, 1000 / p.frame_ms);
  EXPECT_DOUBLE_EQ(p.dpu_share, p.dpu_ms / (p.dpu_ms + p.cpu_ms));
}

// A squeeze-excite shape: the side branch runs through a CPU op and joins the main path
// again. Connected DPU ops, but one launch cannot wait for the CPU in its middle: the
// compiler cuts the DPU work in two (before the CPU op, and the join after it).
TEST(Subgraphs, ADpuGroupThatWouldWaitForTheCpuIsCutInTwo) {
  GraphBuilder b("excite");
  const Value x = b.input("x", {1, 8, 8, 16}, 6);
  const Value h = conv3x3(b, "conv1", x, 16);
  const Value s = b.softmax("softmax", h, -1, 7);
  const Value g = conv3x3(b, "conv2", s, 16);
  b.add("join", {h, g}, 4);
  const Prediction p = predict(b.finish(), builtin_target("kv260"));
  EXPECT_EQ(p.dpu_subgraphs, 2);
  EXPECT_EQ(p.cpu_subgraphs, 1);
}

TEST(Subgraphs, ParallelDpuBranchesShareOneSubgraph) {
  GraphBuilder b("branches");
  const Value x = b.input("x", {1, 8, 8, 16}, 6);
  const Value a = conv3x3(b, "a", x, 16);
  const Value c = conv3x3(b, "c", x, 16);
  b.concat("join", {a, c}, 3, 4);
  EXPECT_EQ(predict(b.finish(), builtin_target("kv260")).dpu_subgraphs, 1);
}

}  // namespace
}  // namespace dpushard
