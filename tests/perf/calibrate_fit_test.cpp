// The calibration fit (dpushard/perf/calibrate.hpp) on times the timing model itself gives for a
// known target: it must find that target's figures again, and say what it cannot fit.
// The same fit against a runtime's measured times is tests/vart/vart_calibrate_test.cpp.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/perf/calibrate.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/zoo/micro.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "support/cpu_tail_model.hpp"

namespace dpushard {
namespace {

// What a board with these figures would measure: DPU, CPU and host time of one frame, int8
// in and out.
double modeled_ms(const Graph& g, const Target& t) {
  PredictOptions o;
  o.io = HostIo::Network;
  const Prediction p = predict(g, t, o);
  return p.dpu_ms + p.cpu_ms + p.host_ms;
}

// The micro-models the DPU runs whole, and two zoo CNNs: floors, compute and copies.
std::vector<Graph> models() {
  std::vector<Graph> out;
  const Target kv260 = builtin_target("kv260");
  for (const MicroModelInfo& m : micro_models()) {
    Graph g = make_micro_model(m.name);
    const Prediction p = predict(g, kv260);
    if (p.cpu_subgraphs == 0 && p.dpu_subgraphs == 1) out.push_back(std::move(g));
  }
  // Compute-bound layers (and 150 kB inputs) besides their floor-bound ones.
  for (const std::int64_t params : {1'000'000, 3'000'000}) {
    ZooSpec spec;
    spec.params = params;
    spec.classes = 10;
    spec.weights = false;
    out.push_back(make_cnn(spec));
  }
  return out;
}

using testing::cpu_tail_model;

// conv (DPU) -> softmax or a LeakyReLU of slope 0.2 (not the DPU's): a DPU subgraph, then a
// CPU subgraph of one op (transcendental or elementwise), at several sizes.
std::vector<Graph> cpu_tail_models() {
  std::vector<Graph> out;
  for (const char* kind : {"softmax", "leaky"})
    for (const auto& [side, channels] :
         {std::pair<std::int64_t, std::int64_t>{28, 64}, {56, 64}, {56, 128}})
      out.push_back(cpu_tail_model(kind, side, channels));
  return out;
}

Target truth() {
  Target t = builtin_target("kv260");
  t.compute_efficiency = 0.55;
  t.min_op_cycles = 8'000;
  t.alu_min_op_cycles = 6'000;
  t.per_frame_us = 2'500;
  t.per_subgraph_us = 500;
  t.copy_in_ns_per_byte = t.copy_out_ns_per_byte = 10;
  t.cpu_transcendental_gflops = 0.37;
  t.cpu_elementwise_gflops = 0.25;
  return t;
}

std::vector<CalibrationSample> samples(const Target& t, bool with_cpu_tails = false) {
  std::vector<CalibrationSample> out;
  std::vector<Graph> graphs = models();
  if (with_cpu_tails)
    for (Graph& g : cpu_tail_models()) graphs.push_back(std::move(g));
  for (Graph& g : graphs) {
    const double ms = modeled_ms(g, t);
    out.push_back({g.name(), std::move(g), ms});
  }
  return out;
}

const CalibrationParameter& parameter(const CalibrationFit& fit, const std::string& name) {
  for (const CalibrationParameter& p : fit.parameters)
    if (p.name == name) return p;
  throw Error("no parameter " + name);
}

TEST(CalibrationFit, FindsTheFiguresThatMadeTheTimes) {
  const std::vector<CalibrationSample> s = samples(truth());
  ASSERT_GE(s.size(), 8u);
  const CalibrationFit fit = fit_calibration(s, builtin_target("kv260"));
  EXPECT_TRUE(fit.converged);
  // No model has a CPU op or a second subgraph: the CPU rates and the launch keep the base's.
  for (const CalibrationParameter& p : fit.parameters) {
    const bool cpu_path = p.name.starts_with("cpu.") || p.name == "overheads.per_subgraph_us";
    EXPECT_EQ(p.fitted, !cpu_path) << p.name << ": " << p.note;
    if (cpu_path) {
      EXPECT_NE(p.note.find("not fitted: no model has"), std::string::npos) << p.name;
    }
  }
  EXPECT_EQ(fit.target.cpu_transcendental_gflops,
            builtin_target("kv260").cpu_transcendental_gflops);
  EXPECT_NEAR(fit.target.compute_efficiency, 0.55, 1e-6);
  EXPECT_NEAR(fit.target.min_op_cycles, 8'000, 1e-3);
  EXPECT_NEAR(fit.target.alu_min_op_cycles, 6'000, 1e-3);
  EXPECT_NEAR(fit.target.per_frame_us + fit.target.per_subgraph_us, 3'000, 1e-4);
  EXPECT_NEAR(fit.target.per_subgraph_us, 100, 1e-9);  // the base's: the sum is what is fitted
  EXPECT_NEAR(fit.target.copy_in_ns_per_byte, 10, 1e-6);
  EXPECT_NEAR(fit.target.copy_out_ns_per_byte, 10, 1e-6);
  EXPECT_LT(fit.rms_relative, 1e-9);
  ASSERT_EQ(fit.residuals.size(), s.size());
  for (const CalibrationResidual& r : fit.residuals) EXPECT_NEAR(r.relative(), 0.0, 1e-9) << r.name;
}

TEST(CalibrationFit, CpuSubgraphsFitTheirRatesAndLaunch) {
  const std::vector<CalibrationSample> s = samples(truth(), true);
  const Target kv260 = builtin_target("kv260");
  const CalibrationFit fit = fit_calibration(s, kv260);
  EXPECT_TRUE(fit.converged);
  EXPECT_NEAR(fit.target.cpu_transcendental_gflops, 0.37, 0.37 * 1e-6);
  EXPECT_NEAR(fit.target.cpu_elementwise_gflops, 0.25, 0.25 * 1e-6);
  EXPECT_NEAR(fit.target.per_subgraph_us, 500, 1e-4);  // now told apart from the fixed cost
  EXPECT_NEAR(fit.target.per_frame_us, 2'500, 1e-3);
  EXPECT_NEAR(fit.target.compute_efficiency, 0.55, 1e-6);
  EXPECT_NEAR(fit.target.copy_in_ns_per_byte, 10, 1e-6);
  EXPECT_TRUE(parameter(fit, "cpu.fallback_gflops.transcendental").fitted);
  EXPECT_TRUE(parameter(fit, "overheads.per_subgraph_us").fitted);
  for (const char* kept : {"gemm", "depthwise", "normalization"}) {
    const CalibrationParameter& p = parameter(fit, std::string("cpu.fallback_gflops.") + kept);
    EXPECT_FALSE(p.fitted) << kept;
    EXPECT_NE(p.note.find("no model has a CPU op of this class"), std::string::npos) << kept;
  }
  EXPECT_EQ(fit.target.cpu_gemm_gflops, kv260.cpu_gemm_gflops);
  EXPECT_LT(fit.rms_relative, 1e-9);
  // The CPU ops' time is a real share of the tails' frames, not a rounding error.
  for (const Graph& g : cpu_tail_models()) {
    PredictOptions o;
    o.io = HostIo::Network;
    const Prediction p = predict(g, truth(), o);
    const double ops_ms = p.cpu_ms - p.cpu_subgraphs * truth().per_subgraph_us / 1e3;
    EXPECT_GT(ops_ms, 0.1 * (p.dpu_ms + p.cpu_ms + p.host_ms)) << g.name();
  }
  // The file: the fitted rates replace theirs, the others stay as the base wrote them.
  const std::string yaml = calibrated_target_yaml(builtin_target_yaml("kv260"), fit, "k", {});
  const Target back = parse_target(yaml, "calibrated.yaml");
  EXPECT_NEAR(back.cpu_transcendental_gflops, 0.37, 1e-5);
  EXPECT_NEAR(back.cpu_elementwise_gflops, 0.25, 1e-5);
  EXPECT_EQ(back.cpu_gemm_gflops, kv260.cpu_gemm_gflops);
  EXPECT_NE(yaml.find("    transcendental: 0.37   # calibrated"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("    gemm: 5.2   # calibrated"), std::string::npos);
}

TEST(CalibrationFit, NoisyTimesGiveStandardErrorsAndResiduals) {
  std::vector<CalibrationSample> s = samples(truth());
  for (std::size_t i = 0; i < s.size(); ++i) s[i].measured_ms *= (i % 2 == 0 ? 1.01 : 0.99);
  const CalibrationFit fit = fit_calibration(s, builtin_target("kv260"));
  EXPECT_NEAR(fit.target.compute_efficiency, 0.55, 0.55 * 0.05);
  EXPECT_GT(parameter(fit, "dpu.compute_efficiency").std_error, 0);
  EXPECT_NEAR(fit.rms_relative, 0.01, 0.005);
}

TEST(CalibrationFit, AFigureNoModelMovesKeepsItsBaseValue) {
  // Without latency floors no op is at one: neither floor can be fitted.
  Target t = truth();
  t.alu_min_op_cycles = t.min_op_cycles = 0;
  Target base = builtin_target("kv260");
  base.alu_min_op_cycles = base.min_op_cycles = 0;
  const CalibrationFit fit = fit_calibration(samples(t), base);
  for (const std::string name : {"dpu.min_op_cycles", "dpu.alu_min_op_cycles"}) {
    const CalibrationParameter& p = parameter(fit, name);
    EXPECT_FALSE(p.fitted) << name;
    EXPECT_EQ(p.value, 0) << name;
    EXPECT_NE(p.note.find("not fitted"), std::string::npos) << name;
  }
  EXPECT_NEAR(fit.target.compute_efficiency, 0.55, 1e-6);
  EXPECT_NEAR(fit.target.copy_in_ns_per_byte, 10, 1e-6);
}

TEST(CalibrationFit, TooFewModelsIsOneLine) {
  std::vector<CalibrationSample> s = samples(truth());
  s.resize(2);
  try {
    fit_calibration(s, builtin_target("kv260"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("are needed"), std::string::npos) << e.what();
  }
}

TEST(CalibrationFit, ANonPositiveTimeIsRefused) {
  std::vector<CalibrationSample> s = samples(truth());
  s[1].measured_ms = 0;
  EXPECT_THROW(fit_calibration(s, builtin_target("kv260")), Error);
}

TEST(CalibrationFit, AnEfficiencyAboveOneIsRefused) {
  // Compute-bound work that took less than the DPU's peak allows.
  Target fast = truth();
  fast.compute_efficiency = 1.0;
  const std::vector<CalibrationSample> s = samples(fast);
  Target slow_clock = fast;
  slow_clock.clock_mhz = 150;  // the base thinks the DPU is half as fast as it was
  EXPECT_THROW(fit_calibration(s, slow_clock), Error);
}

TEST(CalibratedTargetYaml, ReadsBackWithTheFitAndItsResiduals) {
  const CalibrationFit fit = fit_calibration(samples(truth()), builtin_target("kv260"));
  const std::string yaml =
      calibrated_target_yaml(builtin_target_yaml("kv260"), fit, "kv260-board1", {"header line"});
  const Target back = parse_target(yaml, "calibrated.yaml");
  EXPECT_EQ(back.name, "kv260-board1");
  EXPECT_NEAR(back.compute_efficiency, 0.55, 1e-5);
  EXPECT_NEAR(back.min_op_cycles, 8'000, 1);
  EXPECT_NEAR(back.per_frame_us + back.per_subgraph_us, 3'000, 0.01);
  EXPECT_NEAR(back.copy_out_ns_per_byte, 10, 1e-4);
  EXPECT_EQ(back.clock_mhz, 300);  // what is not fitted stays the base's
  EXPECT_NE(yaml.find("# header line"), std::string::npos);
  for (const CalibrationResidual& r : fit.residuals)
    EXPECT_NE(yaml.find("#   " + r.name + ": "), std::string::npos) << r.name;
  EXPECT_NE(yaml.find("compute_efficiency: 0.55   # calibrated"), std::string::npos);
}

TEST(CalibratedTargetYaml, ABaseWithoutAFittedLineIsOneLine) {
  const CalibrationFit fit = fit_calibration(samples(truth()), builtin_target("kv260"));
  std::string base(builtin_target_yaml("kv260"));
  const auto at = base.find("  min_op_cycles:");
  base.erase(at, base.find('\n', at) - at + 1);
  EXPECT_THROW(calibrated_target_yaml(base, fit, "x", {}), Error);
}

}  // namespace
}  // namespace dpushard
