// The invariant: for zoo models (CNN and ConvViT, gated and softmax attention, several
// expert counts) and the real ResNet-20 fixture, on 1 to 4 nodes and with every strategy,
// running the plan's fragments in plan order gives outputs bit-identical to the whole model
// on the ref backend; and so do hybrid plans on 4 and 6 nodes.
// (The imported torchvision resnet18 has its own test: torchvision_test.cpp.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "dpushard/base/sha256.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "split/split_helpers.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;
using testing::ScratchDir;

struct Case {
  std::string name;
  std::function<Graph()> make;
  int experts = 0;  // fork-join branches the planner should find (0: none worth it)
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int k : {1, 2, 3, 5}) {
    ZooSpec spec;
    spec.params = 1'000'000;
    spec.experts = k;
    spec.input = {32, 32, 3};
    spec.classes = 10;
    out.push_back({"cnn_" + std::to_string(k), [spec] { return make_cnn(spec); }, k > 1 ? k : 0});
    out.push_back(
        {"convvit_" + std::to_string(k), [spec] { return make_convvit(spec); }, k > 1 ? k : 0});
  }
  ZooSpec sum;
  sum.params = 1'000'000;
  sum.experts = 3;
  sum.input = {32, 32, 3};
  sum.classes = 10;
  sum.join = ZooJoin::Sum;
  out.push_back({"cnn_sum_3", [sum] { return make_cnn(sum); }, 3});
  ZooSpec softmax = sum;  // the ConvViT with softmax attention (CPU ops between DPU ones)
  softmax.join = ZooJoin::Concat;
  softmax.attention = ConvVitAttention::Softmax;
  out.push_back({"convvit_softmax_3", [softmax] { return make_convvit(softmax); }, 3});
  out.push_back({"resnet20", [] { return read_xmodel(testing::fixture(testing::kResNetInt)); }, 0});
  return out;
}

class Invariant : public ::testing::TestWithParam<Case> {};

TEST_P(Invariant, FragmentsInPlanOrderEqualTheWholeModel) {
  const Case& c = GetParam();
  if (c.name == "resnet20") DPUSHARD_REQUIRE_FIXTURES();
  const Graph model = c.make();
  const auto whole = testing::run_whole(model, 11);
  ScratchDir dir;
  int k = 0;
  for (int nodes = 1; nodes <= 4; ++nodes) {
    for (const auto& v : testing::split_variants()) {
      // One node: every strategy is the whole model as one fragment; check it once.
      if (nodes == 1 && &v != &testing::split_variants().front()) continue;
      const SplitOptions o = testing::split_options(v, nodes);
      const std::string what = testing::describe(c.name, v, nodes);
      Plan plan;
      const auto got = testing::run_split(model, o, dir.path() / std::to_string(k++), 11, &plan);
      ASSERT_EQ(got.size(), whole.size()) << what;
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].name, whole[i].name) << what;
        EXPECT_EQ(got[i].shape, whole[i].shape) << what;
        EXPECT_EQ(got[i].fix_point, whole[i].fix_point) << what;
        EXPECT_EQ(sha256_hex(got[i].data), sha256_hex(whole[i].data)) << what;
      }
      if (nodes == 1) {
        EXPECT_EQ(plan.fragments.size(), 1u) << what;
        continue;
      }
      for (const auto& f : plan.fragments)
        for (const auto& t : f.outputs) EXPECT_TRUE(t.fixed || !v.output_fix) << what;
      if (v.strategy == "pipeline" && v.output_fix && c.experts > 1) {
        // The parallel experts are cut across: some stage receives several tensors from
        // earlier stages. (Without the output fix every cut moves a conv to the CPU, and
        // the planner may rather cut once, at the stem.)
        std::map<std::string, int> received;
        for (const auto& e : plan.edges)
          if (e.from != "model" && e.to != "model") ++received[e.to];
        int most = 0;
        for (const auto& [stage, count] : received) most = std::max(most, count);
        EXPECT_GE(most, 2) << what << ": " << plan.structure;
      }
      if (v.strategy != "experts") continue;
      if (c.experts > 0) {
        EXPECT_EQ(plan.strategy, "experts") << what;
        std::size_t branches = 0, holders = 0;
        for (const auto& f : plan.fragments) {
          branches += f.branches.size();
          holders += f.role == "experts";
        }
        EXPECT_EQ(branches, static_cast<std::size_t>(c.experts)) << what;
        // With the output fix every node holds branches; without it each expert fragment
        // pays the boundary penalty, and the planner may pack small branches on fewer nodes.
        const auto spread = static_cast<std::size_t>(std::min(c.experts, nodes));
        if (v.output_fix) {
          EXPECT_EQ(holders, spread) << what;
        } else {
          EXPECT_LE(holders, spread) << what;
          EXPECT_GE(holders, 2u) << what;
        }
      } else {
        EXPECT_EQ(plan.strategy, "pipeline") << what;
        ASSERT_FALSE(plan.adjustments.empty()) << what;
        bool said = false;
        for (const auto& a : plan.adjustments)
          said = said || (a.kind == "fallback" && a.reason.find("fork-join") != std::string::npos);
        EXPECT_TRUE(said) << what << ": the fallback must say there is no usable fork-join";
      }
    }
  }
}

// Hybrids: replicas of an experts or pipeline plan (4 nodes as 2 x 2, 6 as 2 x 3 and 3 x 2),
// and experts whose branches are pipelined (on 4 and 6 nodes), with and without the output
// fix; each replica's fragments on nodes of their own.
TEST_P(Invariant, HybridPlansEqualTheWholeModel) {
  const Case& c = GetParam();
  if (c.name == "resnet20") DPUSHARD_REQUIRE_FIXTURES();
  const Graph model = c.make();
  const auto whole = testing::run_whole(model, 13);
  ScratchDir dir;
  struct Shape {
    int nodes, replicas;
    Objective objective;
    bool output_fix;
  };
  int k = 0;
  for (const Shape& shape :
       {Shape{4, 2, Objective::Throughput, true}, Shape{4, 2, Objective::Latency, false},
        Shape{6, 2, Objective::Latency, true}, Shape{6, 3, Objective::Throughput, true},
        Shape{4, 1, Objective::Throughput, true}, Shape{6, 1, Objective::Latency, false}}) {
    SplitOptions o;
    o.nodes = shape.nodes;
    o.strategy = "hybrid";
    o.replicas = shape.replicas;
    o.objective = shape.objective;
    o.output_fix = shape.output_fix;
    const std::string what = c.name + " hybrid " + std::to_string(shape.replicas) + " x " +
                             std::to_string(shape.nodes / shape.replicas) +
                             (shape.output_fix ? "" : " --no-output-fix");
    Plan plan;
    const auto got = testing::run_split(model, o, dir.path() / std::to_string(k++), 13, &plan);
    ASSERT_EQ(got.size(), whole.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(sha256_hex(got[i].data), sha256_hex(whole[i].data)) << what;
    if (shape.replicas == 1 && (c.experts < 2 || c.experts >= shape.nodes)) {
      // Pipelined experts need a fork-join and more nodes than branches.
      EXPECT_EQ(plan.strategy, "replicate") << what;
      continue;
    }
    ASSERT_EQ(plan.strategy, "hybrid") << what;
    EXPECT_EQ(plan.replicas, shape.replicas) << what;
    if (shape.replicas == 1) {
      EXPECT_EQ(plan.inner_strategy, "pipelined-experts") << what;
      std::size_t staged = 0;
      std::set<std::string> branches;  // "experts1" of "experts1_stage0"
      for (const auto& f : plan.fragments) {
        staged += f.name.find("_stage") != std::string::npos;
        if (f.role == "experts") branches.insert(f.name.substr(0, f.name.find("_stage")));
      }
      EXPECT_GE(staged, 2u) << what << ": " << plan.structure;
      EXPECT_EQ(branches.size(), static_cast<std::size_t>(c.experts)) << what;
    }
    EXPECT_GE(plan.fragments.size(), 2u) << what << ": " << plan.structure;
    if (c.experts > 1 && plan.inner_strategy == "experts") {
      std::size_t branches = 0;
      for (const auto& f : plan.fragments) branches += f.branches.size();
      EXPECT_EQ(branches, static_cast<std::size_t>(c.experts)) << what;
    }
    for (const auto& f : plan.fragments)
      EXPECT_EQ(f.nodes.size(), static_cast<std::size_t>(shape.replicas)) << what << " " << f.name;
  }
}

// ResNet-20's residual fork-joins overlap too little of its time for experts, unless the
// minimum overlap is lifted: then its most parallel one runs as pipelined experts on 3 and
// 4 nodes (the residual convs in stages beside the shortcut), bit-identical.
TEST(InvariantResNet20, PipelinedExpertsOnAResidualForkJoin) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph model = read_xmodel(testing::fixture(testing::kResNetInt));
  const auto whole = testing::run_whole(model, 17);
  ScratchDir dir;
  for (int nodes : {3, 4}) {
    SplitOptions o;
    o.nodes = nodes;
    o.strategy = "hybrid";
    o.replicas = 1;
    o.min_parallel_fraction = 0.0;
    Plan plan;
    const auto got = testing::run_split(model, o, dir.path() / std::to_string(nodes), 17, &plan);
    ASSERT_EQ(got.size(), whole.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(sha256_hex(got[i].data), sha256_hex(whole[i].data)) << nodes << " nodes";
    EXPECT_EQ(plan.inner_strategy, "pipelined-experts") << plan.structure;
    EXPECT_THAT(plan.structure, HasSubstr("stages")) << nodes << " nodes";
  }
}

INSTANTIATE_TEST_SUITE_P(ZooAndResNet20, Invariant, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace dpushard
