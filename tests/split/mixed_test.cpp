// Mixed boards (docs/splitting.md "Mixed boards"): a cluster of two KV260s and a ZCU102
// (three DPU cores). The planner prices each fragment on the node that runs it and gives
// the ZCU102 more of the work; its plan beats the best plan made for a single target on the
// same three nodes (priced there honestly: placed for one target, priced on each node's
// board); its fragments stay bit-identical to the whole model; each node's memory is its own.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/plan_check.hpp"
#include "dpushard/split/memory_budget.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "split/split_helpers.hpp"

namespace dpushard {
namespace {

using testing::run_split;
using testing::run_whole;

// The timing models of a 2 x KV260 + 1 x ZCU102 cluster, node 0 the reference board.
struct MixedCluster {
  std::unique_ptr<CostModel> kv260 = make_timing_cost_model(builtin_target("kv260"));
  std::unique_ptr<CostModel> zcu102 = make_timing_cost_model(builtin_target("zcu102"));

  // Options for `reference`'s board on every node, or (mixed) each node's own.
  SplitOptions options(bool mixed, const CostModel* reference = nullptr) const {
    SplitOptions o;
    o.nodes = 3;
    o.cost_model = reference != nullptr ? reference : kv260.get();
    o.memory_budget_bytes = builtin_target("kv260").model_memory_bytes;
    o.memory_board = "kv260";
    if (mixed) {
      auto same = [&](const CostModel* c) { return c == o.cost_model ? o.cost_model : c; };
      o.node_cost_models = {same(kv260.get()), same(kv260.get()), same(zcu102.get())};
      o.node_targets = {"kv260", "kv260", "zcu102"};
      o.node_memory_budget_bytes = {builtin_target("kv260").model_memory_bytes,
                                    builtin_target("kv260").model_memory_bytes,
                                    builtin_target("zcu102").model_memory_bytes};
    }
    return o;
  }
};

Graph cnn(std::int64_t params, std::array<std::int64_t, 3> input) {
  ZooSpec spec;
  spec.params = params;
  spec.experts = 3;
  spec.input = input;
  spec.seed = 1;
  return make_cnn(spec);
}

// The claim, on the 20M zoo CNN at 224x224 (as `dpushard zoo cnn --params 20M
// --experts 3 --input 224x224x3 --seed 1` makes it): the mixed plan's predicted throughput
// beats every plan made for one target (kv260 or zcu102 on all three nodes), each priced on
// the boards it would really run on.
TEST(MixedBoards, PlanForTheRealBoardsBeatsTheBestSingleTargetPlan) {
  const MixedCluster c;
  const Graph model = cnn(20'000'000, {224, 224, 3});
  SplitOptions mixed = c.options(true);
  mixed.objective = Objective::Throughput;
  const Plan plan = split_model(model, mixed).plan;
  EXPECT_EQ(plan.node_targets, (std::vector<std::string>{"kv260", "kv260", "zcu102"}));

  double best_single = 0;
  std::string best_label;
  for (const CostModel* reference : {c.kv260.get(), c.zcu102.get()}) {
    SplitOptions single = c.options(true, reference);
    single.objective = Objective::Throughput;
    single.uniform_placement = true;
    const Plan baseline = split_model(model, single).plan;
    for (const auto& cand : baseline.candidates)
      if (cand.note.empty() && cand.predicted.throughput_fps > best_single) {
        best_single = cand.predicted.throughput_fps;
        best_label = reference->name() + " " + cand.label();
      }
  }
  EXPECT_GT(plan.predicted.throughput_fps, 1.10 * best_single)
      << "mixed " << plan.strategy << " " << plan.predicted.throughput_fps
      << " fps against the best single-target plan (" << best_label << ") " << best_single
      << " fps: " << plan.structure;
  // The ZCU102 (node 2) runs more fragments than either KV260: its three DPU cores.
  std::map<int, int> held;
  for (const auto& f : plan.fragments)
    for (int n : f.nodes) ++held[n];
  EXPECT_GT(held[2], held[0]) << plan.structure;
  EXPECT_GT(held[2], held[1]) << plan.structure;
}

// Replicate on the mixed boards: a copy per DPU core (three on the ZCU102), frames shared
// by the boards' speed; it beats the equal-share replicate made for one target.
TEST(MixedBoards, ReplicateRunsACopyPerCoreWithFramesSharedBySpeed) {
  const MixedCluster c;
  const Graph model = cnn(20'000'000, {224, 224, 3});
  SplitOptions mixed = c.options(true);
  mixed.strategy = "replicate";
  mixed.objective = Objective::Throughput;
  const Plan plan = split_model(model, mixed).plan;
  ASSERT_EQ(plan.fragments.size(), 1u);
  EXPECT_EQ(plan.fragments[0].nodes, (std::vector<int>{0, 1, 2, 2, 2}));
  ASSERT_EQ(plan.frame_share.size(), 5u);
  // A ZCU102 core is a little slower than a KV260 (281 MHz against 300).
  EXPECT_GT(plan.frame_share[0], plan.frame_share[2]) << plan.structure;
  EXPECT_EQ(plan.frame_share[0], plan.frame_share[1]);
  EXPECT_EQ(plan.frame_share[2], plan.frame_share[4]);
  SplitOptions single = c.options(true, c.kv260.get());
  single.strategy = "replicate";
  single.objective = Objective::Throughput;
  single.uniform_placement = true;
  const Plan equal = split_model(model, single).plan;
  EXPECT_TRUE(equal.frame_share.empty());
  EXPECT_GT(plan.predicted.throughput_fps, 1.5 * equal.predicted.throughput_fps) << plan.structure;
}

// A plan for one kind of board is the same whether the nodes' targets are given or not
// (the reference board on every node): nothing changes for a cluster of one target.
TEST(MixedBoards, OneKindOfBoardPlansAsBefore) {
  const MixedCluster c;
  const Graph model = cnn(1'000'000, {32, 32, 3});
  for (const std::string s : {"experts", "pipeline", "auto"}) {
    SplitOptions plain = c.options(false);
    plain.strategy = s;
    SplitOptions named = plain;
    named.node_cost_models = {c.kv260.get(), c.kv260.get(), c.kv260.get()};
    named.node_targets = {"kv260", "kv260", "kv260"};
    Plan a = split_model(model, plain).plan;
    Plan b = split_model(model, named).plan;
    EXPECT_EQ(b.node_targets, named.node_targets);
    b.node_targets.clear();
    EXPECT_EQ(a, b) << s;
  }
}

// Every strategy on the mixed cluster: fragments in plan order give the whole model's
// outputs bit for bit, and plan.yaml records (and reads back) each node's target and budget.
TEST(MixedBoards, MixedPlansAreBitIdentical) {
  const MixedCluster c;
  const Graph model = cnn(1'000'000, {32, 32, 3});
  const auto whole = run_whole(model, 3);
  const auto dir = std::filesystem::temp_directory_path() / "dpushard-mixed-invariant";
  for (const auto& v : testing::split_variants()) {
    SplitOptions o = c.options(true);
    o.strategy = v.strategy;
    o.objective = v.objective;
    o.output_fix = v.output_fix;
    std::filesystem::remove_all(dir);
    Plan written;
    const auto outputs = run_split(model, o, dir, 3, &written);
    const std::string what = testing::describe("cnn 1M mixed", v, 3);
    ASSERT_EQ(outputs.size(), whole.size()) << what;
    for (std::size_t i = 0; i < whole.size(); ++i)
      EXPECT_EQ(outputs[i].data, whole[i].data) << what << ": output " << i;
    EXPECT_EQ(written.node_targets, o.node_targets) << what;
    EXPECT_EQ(written.memory.node_budget_bytes, o.node_memory_budget_bytes) << what;
  }
  std::filesystem::remove_all(dir);
}

// Each node's fragments must fit that node's own memory: a board with little memory for
// models (0.3 MiB) cannot hold the whole 1M model, so replicate fails naming it; a plan
// whose node budget is too small for that node's fragments is refused by check_plan.
TEST(MixedBoards, EachNodeFitsItsOwnBudget) {
  const MixedCluster c;
  const Graph model = cnn(1'000'000, {32, 32, 3});
  SplitOptions o = c.options(true);
  o.node_memory_budget_bytes[1] = 320 << 10;  // node 1: 0.3 MiB for models
  o.node_targets[1] = "tiny";
  o.strategy = "replicate";
  try {
    (void)split_model(model, o);
    ADD_FAILURE() << "replicate fitted a 0.3 MiB node";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 1 (tiny) has 0.3 MiB"), std::string::npos)
        << e.what();
  }
  o.strategy = "pipeline";
  o.node_memory_budget_bytes[1] = 900ll << 20;
  Plan plan = split_model(model, o).plan;
  ASSERT_EQ(plan.memory.node_budget_bytes.size(), 3u);
  plan.memory.node_budget_bytes[2] = 1024;  // the ZCU102 shrinks after planning
  try {
    check_plan(plan);
    ADD_FAILURE() << "check_plan accepted a node over its own budget";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 2 (zcu102)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dpushard
