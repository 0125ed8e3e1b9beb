// Weightless fragments (docs/benchmarking.md "Models without weights"): a zoo model made
// without weights splits into the same plan as its weighted twin, its fragments are written
// and read back still marked weightless, a timing-only sim backend runs each of them in the
// modeled time of the weighted fragment, and every backend that computes values refuses
// them with one line.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/exec/sim_backend.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/fragment_io.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Family {
  const char* name;
  Graph (*make)(const ZooSpec&);
  std::array<std::int64_t, 3> input;
};

const Family kFamilies[] = {{"cnn", &make_cnn, {224, 224, 3}},
                            {"convvit", &make_convvit, {112, 112, 3}}};

void PrintTo(const Family& family, std::ostream* os) { *os << family.name; }

class WeightlessFragments : public ::testing::TestWithParam<Family> {};

// Split as the suites and the models role do: priced by the KV260's timing model.
SplitResult split_on_kv260(const Graph& model, int nodes, const std::string& strategy) {
  const Target kv260 = resolve_target("kv260");
  const auto cost = make_timing_cost_model(kv260, TimingCostParams{});
  SplitOptions options;
  options.nodes = nodes;
  options.strategy = strategy;
  options.cost_model = cost.get();
  options.memory_budget_bytes = kv260.model_memory_bytes;
  options.memory_board = kv260.name;
  return split_model(model, options);
}

// Inputs of the fragment's shapes and fix points (zeros).
std::vector<QTensor> zero_inputs(const Graph& fragment) {
  std::vector<QTensor> inputs = input_specs(fragment);
  for (QTensor& t : inputs) {
    std::int64_t count = 1;
    for (const std::int64_t d : t.shape) count *= d;
    t.data.assign(static_cast<std::size_t>(count), 0);
  }
  return inputs;
}

std::unique_ptr<Backend> loaded_sim(const Graph& fragment) {
  auto sim = make_backend("sim", BackendOptions{});
  sim->load(fragment);
  return sim;
}

TEST_P(WeightlessFragments, RunOnSimInTheWeightedFragmentsModeledTime) {
  register_builtin_backends();
  ZooSpec spec;
  spec.params = 1'000'000;
  spec.input = GetParam().input;
  const Graph weighted = GetParam().make(spec);
  spec.weights = false;
  const Graph weightless = GetParam().make(spec);

  const testing::ScratchDir dir;
  for (const std::string strategy : {"experts", "pipeline"}) {
    SplitResult with = split_on_kv260(weighted, 3, strategy);
    SplitResult without = split_on_kv260(weightless, 3, strategy);
    const std::string name(strategy);
    const Plan plan_with = write_split(with, dir / (name + "-weighted"));
    const Plan plan_without = write_split(without, dir / (name + "-weightless"));

    // The same plan: fragments, placement, cost and prediction; only the bytes differ.
    ASSERT_EQ(plan_with.fragments.size(), plan_without.fragments.size()) << name;
    EXPECT_EQ(plan_with.strategy, plan_without.strategy);
    EXPECT_DOUBLE_EQ(plan_with.predicted.latency_ms, plan_without.predicted.latency_ms) << name;
    EXPECT_DOUBLE_EQ(plan_with.predicted.throughput_fps, plan_without.predicted.throughput_fps)
        << name;
    for (std::size_t i = 0; i < plan_with.fragments.size(); ++i) {
      const PlanFragment& a = plan_with.fragments[i];
      const PlanFragment& b = plan_without.fragments[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.nodes, b.nodes) << a.name;
      EXPECT_EQ(a.cost.params, b.cost.params) << a.name;
      EXPECT_EQ(a.cost.macs, b.cost.macs) << a.name;
      EXPECT_NE(a.sha256, b.sha256) << a.name;  // the weightless file is another file

      // Read back as a worker does: still marked, far smaller, timed alike on sim.
      const LoadedFragment fa = read_fragment(a, dir / (name + "-weighted"));
      const LoadedFragment fb = read_fragment(b, dir / (name + "-weightless"));
      EXPECT_FALSE(weights_omitted(fa.graph)) << a.name;
      ASSERT_TRUE(weights_omitted(fb.graph)) << b.name;
      if (a.cost.params > 100'000) {
        EXPECT_LT(fb.bytes.size() * 10, fa.bytes.size()) << a.name;
      }

      const auto sim_a = loaded_sim(fa.graph);
      const auto sim_b = loaded_sim(fb.graph);
      const Prediction& pa = sim_prediction(*sim_a);
      const Prediction& pb = sim_prediction(*sim_b);
      EXPECT_GT(pa.latency_ms, 0) << a.name;
      EXPECT_DOUBLE_EQ(pa.dpu_ms, pb.dpu_ms) << a.name;
      EXPECT_DOUBLE_EQ(pa.cpu_ms, pb.cpu_ms) << a.name;
      EXPECT_DOUBLE_EQ(pa.host_ms, pb.host_ms) << a.name;
      EXPECT_DOUBLE_EQ(pa.net_ms, pb.net_ms) << a.name;
      EXPECT_DOUBLE_EQ(pa.latency_ms, pb.latency_ms) << a.name;

      // One frame through the weightless fragment: outputs of the weighted one's shapes,
      // marked not computed (timing only).
      const std::vector<QTensor> outputs = sim_b->run(zero_inputs(fb.graph));
      const std::vector<QTensor> expected = sim_a->run(zero_inputs(fa.graph));
      ASSERT_EQ(outputs.size(), expected.size()) << b.name;
      for (std::size_t o = 0; o < outputs.size(); ++o) {
        EXPECT_EQ(outputs[o].name, expected[o].name);
        EXPECT_EQ(outputs[o].shape, expected[o].shape) << outputs[o].name;
        EXPECT_FALSE(outputs[o].computed) << outputs[o].name;
      }
    }
  }
}

// Every backend of this build that computes values (ref; cpu where it is built) and sim
// with numerics refuse a weightless fragment read from its plan, in one line naming it; the
// weighted fragment loads on each.
TEST_P(WeightlessFragments, AreRefusedInOneLineByEveryBackendThatComputes) {
  register_builtin_backends();
  ZooSpec spec;
  spec.params = 1'000'000;
  spec.input = GetParam().input;
  const Graph weighted = GetParam().make(spec);
  spec.weights = false;
  const Graph weightless = GetParam().make(spec);
  const testing::ScratchDir dir;
  SplitResult with = split_on_kv260(weighted, 2, "pipeline");
  SplitResult without = split_on_kv260(weightless, 2, "pipeline");
  const Plan plan_with = write_split(with, dir / "weighted");
  const Plan plan_without = write_split(without, dir / "weightless");
  const Graph fragment = read_fragment(plan_without.fragments.front(), dir / "weightless").graph;
  const Graph twin = read_fragment(plan_with.fragments.front(), dir / "weighted").graph;

  std::vector<std::pair<std::string, BackendOptions>> computing;
  for (const std::string& name : backend_names())
    if (name != "sim") computing.emplace_back(name, BackendOptions{});
  ASSERT_TRUE(std::any_of(computing.begin(), computing.end(),
                          [](const auto& b) { return b.first == "ref"; }));
  BackendOptions numerics;
  numerics.settings["numerics"] = "true";
  computing.emplace_back("sim", numerics);
  for (const auto& [name, options] : computing) {
    const std::string msg = error_of([&] { make_backend(name, options)->load(fragment); });
    EXPECT_THAT(msg, HasSubstr("model '" + fragment.name() + "' was written without weights"))
        << name;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << name << ": " << msg;
    EXPECT_EQ(error_of([&] { make_backend(name, options)->load(twin); }), "") << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, WeightlessFragments, ::testing::ValuesIn(kFamilies),
                         [](const ::testing::TestParamInfo<Family>& param_info) {
                           return std::string(param_info.param.name);
                         });

}  // namespace
}  // namespace dpushard
