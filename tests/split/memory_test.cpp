// Memory budgets (docs/splitting.md "Memory budgets"): a fragment's need, plans that fit
// only, the one-line errors, check_plan on a plan over budget, and the weightless 3B zoo
// model planned model-parallel only and refused by exec.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/cost.hpp"
#include "dpushard/plan/plan_check.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/memory_budget.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "support/cli_runner.hpp"
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

// input [1,8,8,16] -> conv 3x3 to 32 -> fix -> conv 1x1 to 16 -> fix (the output).
Graph two_convs() {
  GraphBuilder b("two_convs");
  const Value x = b.input("x", {1, 8, 8, 16}, 6);
  Conv2dSpec same;
  same.kernel = {3, 3};
  same.pad = {1, 1, 1, 1};
  const Value w1 = b.constant("w1", {32, 3, 3, 16}, std::vector<std::int8_t>(32 * 9 * 16, 1), 7);
  const Value b1 = b.constant("b1", {32}, std::vector<std::int8_t>(32, 1), 8);
  const Value y = b.conv2d("conv1", x, w1, b1, same, 4);
  Conv2dSpec pointwise;
  pointwise.kernel = {1, 1};
  pointwise.pad = {0, 0, 0, 0};
  const Value w2 = b.constant("w2", {16, 1, 1, 32}, std::vector<std::int8_t>(16 * 32, 1), 7);
  b.conv2d("conv2", y, w2, std::nullopt, pointwise, 4);
  return b.finish();
}

ZooSpec cnn_spec(std::int64_t params, bool weights) {
  ZooSpec spec;
  spec.params = params;
  spec.weights = weights;
  return spec;
}

SplitOptions budgeted(int nodes, const std::string& strategy, std::int64_t budget) {
  SplitOptions o;
  o.nodes = nodes;
  o.strategy = strategy;
  o.memory_budget_bytes = budget;
  o.memory_board = "kv260";
  return o;
}

std::int64_t largest_node_need(const Plan& plan) {
  std::map<int, std::int64_t> per_node;
  for (const auto& f : plan.fragments)
    for (int n : f.nodes) per_node[n] += f.cost.memory_bytes;
  std::int64_t most = 0;
  for (const auto& [node, bytes] : per_node) most = std::max(most, bytes);
  return most;
}

bool has_memory_adjustment(const Plan& plan, const std::string& text) {
  return std::any_of(plan.adjustments.begin(), plan.adjustments.end(), [&](const auto& a) {
    return a.kind == "memory" && a.reason.find(text) != std::string::npos;
  });
}

TEST(MemoryBudget, FragmentNeedIsWeightsCodeAndLiveFeatureMaps) {
  const Graph g = two_convs();
  const FragmentMemory m = fragment_memory(g, 3);
  EXPECT_EQ(m.weight_bytes, 32 * 9 * 16 + 32 + 16 * 32);
  EXPECT_EQ(m.io_bytes, 8 * 8 * 16 + 8 * 8 * 16);  // input and output, int8
  EXPECT_EQ(m.live_bytes, 8 * 8 * 32);             // conv1's output, between the two
  const std::int64_t activations = graph_cost(g).activation_bytes;
  EXPECT_EQ(m.code_bytes, (activations + 24) / 25);
  EXPECT_EQ(m.feature_bytes(), 3 * (m.io_bytes + m.live_bytes));
  EXPECT_EQ(m.total_bytes(), m.weight_bytes + m.code_bytes + m.feature_bytes());
  EXPECT_EQ(fragment_memory(g, 1).feature_bytes(), m.io_bytes + m.live_bytes);
}

TEST(MemoryBudget, NamedStrategyThatDoesNotFitNamesFragmentAndBothSizes) {
  const Graph model = make_cnn(cnn_spec(1'000'000, false));
  const std::int64_t whole = fragment_memory(model).total_bytes();
  const std::int64_t budget = whole / 2;
  const std::string msg = error_of([&] { split_model(model, budgeted(2, "replicate", budget)); });
  EXPECT_THAT(msg, HasSubstr("fragment 'whole' needs "));
  EXPECT_THAT(msg, HasSubstr("has " + memory_text(budget) + " for models"));
  EXPECT_TRUE(std::regex_search(msg, std::regex("needs [0-9.]+ (MiB|GiB)"))) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // One node: the whole model or nothing.
  EXPECT_THAT(error_of([&] { split_model(model, budgeted(1, "auto", budget)); }),
              HasSubstr("fragment 'whole' needs "));
}

TEST(MemoryBudget, AutoProposesOnlyPlansThatFit) {
  const Graph model = make_cnn(cnn_spec(3'000'000, false));
  const Plan experts = split_model(model, budgeted(3, "experts", 1LL << 40)).plan;
  ASSERT_EQ(experts.strategy, "experts");
  const std::int64_t whole = fragment_memory(model).total_bytes();
  const std::int64_t parallel = largest_node_need(experts);
  ASSERT_LT(parallel, whole);
  const std::int64_t budget = (parallel + whole) / 2;

  for (const Objective objective : {Objective::Latency, Objective::Throughput}) {
    SplitOptions o = budgeted(3, "auto", budget);
    o.objective = objective;
    const Plan plan = split_model(model, o).plan;
    EXPECT_NE(plan.strategy, "replicate");
    EXPECT_LE(largest_node_need(plan), budget);
    EXPECT_EQ(plan.memory.budget_bytes, budget);
    EXPECT_EQ(plan.memory.frames_in_flight, 2);
    for (const auto& f : plan.fragments) EXPECT_GT(f.cost.memory_bytes, 0) << f.name;
    for (const auto& c : plan.candidates) {
      if (c.strategy == "replicate") {
        EXPECT_THAT(c.note, HasSubstr("does not fit: fragment"));
      }
    }
    EXPECT_TRUE(has_memory_adjustment(plan, "fits no single kv260"));
    EXPECT_TRUE(has_memory_adjustment(plan, "only model-parallel plans"));
  }
  // Nothing fits: one line giving each candidate's reason.
  const std::string msg = error_of([&] { split_model(model, budgeted(3, "auto", parallel / 4)); });
  EXPECT_THAT(msg, HasSubstr("no plan on 3 nodes fits: replicate: fragment 'whole' needs"));
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(MemoryBudget, CheckPlanRefusesANodeOverItsBudget) {
  const Graph model = make_cnn(cnn_spec(1'000'000, false));
  Plan plan = split_model(model, budgeted(3, "experts", 1LL << 40)).plan;
  ASSERT_NO_THROW(check_plan(plan));
  EXPECT_NO_THROW(plan_from_yaml(plan_to_yaml(plan), "test"));  // memory: round trips
  EXPECT_EQ(plan_from_yaml(plan_to_yaml(plan), "test").memory, plan.memory);
  plan.memory.budget_bytes = largest_node_need(plan) - 1;
  const std::string msg = error_of([&] { check_plan(plan); });
  EXPECT_THAT(msg, HasSubstr("memory: fragment '"));
  EXPECT_THAT(msg, HasSubstr(memory_text(plan.memory.budget_bytes) + " for models"));
  EXPECT_THAT(error_of([&] { plan_from_yaml(plan_to_yaml(plan), "test"); }),
              HasSubstr("memory: fragment '"));
  plan.memory = {};  // no budget recorded: nothing to check
  EXPECT_NO_THROW(check_plan(plan));
}

// The 3B-parameter zoo CNN without weights: far over one KV260's 900 MiB, planned on 8 in
// well under a second, model-parallel only.
TEST(MemoryBudget, WeightlessThreeBillionCnnIsPlannedModelParallelOnly) {
  const Graph model = make_cnn(cnn_spec(3'000'000'000, false));
  ASSERT_TRUE(weights_omitted(model));
  EXPECT_GT(graph_cost(model).params, 2'900'000'000);
  const std::int64_t kv260 = std::int64_t{900} << 20;
  for (const std::string strategy : {"auto", "pipeline"}) {
    const Plan plan = split_model(model, budgeted(8, strategy, kv260)).plan;
    EXPECT_NE(plan.strategy, "replicate");
    EXPECT_LE(largest_node_need(plan), kv260);
    EXPECT_TRUE(has_memory_adjustment(plan, "only model-parallel plans"));
  }
  EXPECT_THAT(error_of([&] { split_model(model, budgeted(8, "replicate", kv260)); }),
              HasSubstr("fragment 'whole' needs "));
}

TEST(ZooWithoutWeights, ExecRefusesItWithOneLine) {
  register_builtin_backends();
  const Graph model = make_cnn(cnn_spec(1'000'000, false));
  // Every backend of this build that computes values (ref, and cpu where it is built: not
  // in the aarch64 cross build); sim is checked below, vart is not built into this test.
  std::vector<std::string> computing;
  for (const std::string& name : backend_names())
    if (name != "sim") computing.push_back(name);
  ASSERT_NE(std::find(computing.begin(), computing.end(), "ref"), computing.end());
  for (const std::string& backend : computing) {
    auto b = make_backend(backend);
    const std::string msg = error_of([&] { b->load(model); });
    EXPECT_THAT(msg, HasSubstr("written without weights")) << backend;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }  // sim models time from shapes alone; with numerics it computes, and refuses.
  BackendOptions timing_only;
  EXPECT_NO_THROW(make_backend("sim", timing_only)->load(model));
  BackendOptions numerics;
  numerics.settings["numerics"] = "true";
  EXPECT_THAT(error_of([&] { make_backend("sim", numerics)->load(model); }),
              HasSubstr("written without weights"));
}

TEST(ZooWithoutWeights, CliSplitsAndInspectsButRefusesExec) {
  const testing::ScratchDir dir;
  const auto model = (dir / "cnn3g_int.xmodel").string();
  auto r = testing::run_cli(dir, "zoo cnn --params 3G --no-weights -o " + model);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::filesystem::file_size(model), 1 << 20);  // shapes only
  r = testing::run_cli(dir, "inspect " + model);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = testing::run_cli(dir, "exec " + model + " --backend ref");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("dpushard: error: exec: model 'zoo_cnn' was written without "
                               "weights"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = testing::run_cli(
      dir, "split " + model + " --nodes 8 --target kv260 -o " + (dir / "plan").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("memory: the whole model fits no single kv260"));
  const Plan plan = read_plan(dir / "plan");
  EXPECT_NE(plan.strategy, "replicate");
  r = testing::run_cli(
      dir, "split " + model + " --nodes 8 --strategy replicate -o " + (dir / "plan2").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("dpushard: error: split: fragment 'whole' needs "));
}

}  // namespace
}  // namespace dpushard
