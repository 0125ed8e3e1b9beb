// The planner on hand-built graphs of known structure: units, fork-join detection,
// pipeline cut points and --cuts, the output fix operator, the naive split, the cost model.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fork_join.hpp"
#include "split/split_helpers.hpp"
#include "strategies.hpp"
#include "unit_graph.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;
using testing::ScratchDir;

bool same_bytes(const std::vector<QTensor>& a, const std::vector<QTensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].data != b[i].data || a[i].name != b[i].name || a[i].fix_point != b[i].fix_point)
      return false;
  return true;
}

const PlanAdjustment* find_adjustment(const Plan& plan, const std::string& kind) {
  for (const auto& a : plan.adjustments)
    if (a.kind == kind) return &a;
  return nullptr;
}

std::unique_ptr<CostModel> roofline() { return make_roofline_cost_model(); }

TEST(Units, ChainsStayTogetherAndInputsStandAlone) {
  const Graph g = testing::chain_model(3);
  auto cost = roofline();
  const split::UnitGraph units(g, Oracle::builtin(), *cost);
  // x -> fix, then three conv -> relu -> fix units.
  ASSERT_EQ(units.units().size(), 4u);
  EXPECT_TRUE(units.unit(units.order().front()).is_input);
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(units.unit(units.order()[i]).ops.size(), 3u);
  EXPECT_EQ(units.tensors().size(), 4u);  // the input and the three conv outputs
}

TEST(ForkJoin, FindsTheBranchesBetweenForkAndJoin) {
  const Graph g = testing::fork_join_model({1, 2, 3});
  auto cost = roofline();
  const split::UnitGraph units(g, Oracle::builtin(), *cost);
  const auto found = split::find_fork_joins(units);
  ASSERT_FALSE(found.empty());
  const auto& fj = found.front();
  EXPECT_EQ(split::unit_name(units, fj.fork), "stem_fix");
  ASSERT_TRUE(fj.join.has_value());
  EXPECT_EQ(split::unit_name(units, *fj.join), "join_fix");
  ASSERT_EQ(fj.branches.size(), 3u);
  std::vector<std::size_t> sizes;
  for (const auto& b : fj.branches) sizes.push_back(b.size());
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{1, 2, 3}));
  EXPECT_NEAR(fj.parallel_seconds,
              fj.branch_seconds[0] + fj.branch_seconds[1] + fj.branch_seconds[2] -
                  *std::max_element(fj.branch_seconds.begin(), fj.branch_seconds.end()),
              1e-15);
}

TEST(ForkJoin, NoneInAChain) {
  const Graph g = testing::chain_model(4);
  auto cost = roofline();
  EXPECT_TRUE(split::find_fork_joins(split::UnitGraph(g, Oracle::builtin(), *cost)).empty());
}

TEST(Experts, SpreadsAnyNumberOfBranchesOverAnyNumberOfNodes) {
  ScratchDir dir;
  for (int k : {2, 3, 5}) {
    const Graph g = testing::fork_join_model(std::vector<int>(static_cast<std::size_t>(k), 2));
    const auto whole = testing::run_whole(g, 3);
    for (int n : {2, 3, 4}) {
      SplitOptions o;
      o.nodes = n;
      o.strategy = "experts";
      Plan plan;
      const auto got =
          testing::run_split(g, o, dir.path() / ("p" + std::to_string(k * 10 + n)), 3, &plan);
      EXPECT_TRUE(same_bytes(got, whole)) << k << " branches on " << n << " nodes";
      EXPECT_EQ(plan.strategy, "experts");
      int expert_fragments = 0;
      std::size_t branches = 0;
      std::vector<int> branch_count;
      for (const auto& f : plan.fragments)
        if (f.role == "experts") {
          ++expert_fragments;
          branches += f.branches.size();
          branch_count.push_back(static_cast<int>(f.branches.size()));
        }
      EXPECT_EQ(expert_fragments, std::min(k, n));
      EXPECT_EQ(branches, static_cast<std::size_t>(k));
      // Equal branches: LPT gives every node holding branches ceil or floor of k / n.
      for (int c : branch_count) EXPECT_LE(c, (k + n - 1) / n);
      EXPECT_EQ(plan.fragments.front().role, "stem");
      EXPECT_EQ(plan.fragments.back().role, "tail");
    }
  }
}

TEST(Experts, ForkAtTheModelInputNeedsNoStem) {
  ScratchDir dir;
  const Graph g = testing::fork_join_model({2, 2, 2}, false);
  SplitOptions o;
  o.nodes = 3;
  o.strategy = "experts";
  Plan plan;
  const auto got = testing::run_split(g, o, dir.path(), 4, &plan);
  EXPECT_TRUE(same_bytes(got, testing::run_whole(g, 4)));
  EXPECT_EQ(plan.strategy, "experts");
  for (const auto& f : plan.fragments) EXPECT_NE(f.role, "stem");
  int from_model = 0;
  for (const auto& e : plan.edges) from_model += e.from == "model";
  EXPECT_EQ(from_model, 3);  // every expert fragment reads the input directly
}

TEST(Experts, AStemTensorAlsoReadByTheTailIsKeptAsAnOutput) {
  ScratchDir dir;
  GraphBuilder b("skip_to_tail");
  const Value x = b.input("x", {1, 8, 8, 8}, 5);
  const Value s1 = testing::conv(b, "s1", x, 8);
  const Value s2 = testing::conv(b, "s2", s1, 8);
  const Value b0 = testing::conv(b, "b0", testing::conv(b, "b0a", s2, 8), 8);
  const Value b1 = testing::conv(b, "b1", testing::conv(b, "b1a", s2, 8), 8);
  const Value join = b.add("join", {b0, b1}, 5);
  testing::conv(b, "head", b.add("skip", {join, s1}, 5), 8);
  const Graph g = b.finish();
  SplitOptions o;
  o.nodes = 2;
  o.strategy = "experts";
  Plan plan;
  EXPECT_TRUE(
      same_bytes(testing::run_split(g, o, dir.path(), 12, &plan), testing::run_whole(g, 12)));
  EXPECT_EQ(plan.strategy, "experts");
  const auto* kept = find_adjustment(plan, "output_ops");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->at, "s1_fix");
  EXPECT_EQ(plan.fragment("stem").oracle_verdict, "dpu+boundary");
}

TEST(Experts, NoForkJoinFallsBackToPipelineAndSaysWhy) {
  ScratchDir dir;
  const Graph g = testing::chain_model(4);
  SplitOptions o;
  o.nodes = 2;
  o.strategy = "experts";
  Plan plan;
  testing::run_split(g, o, dir.path(), 1, &plan);
  EXPECT_EQ(plan.strategy, "pipeline");
  EXPECT_EQ(plan.requested_strategy, "experts");
  const auto* fallback = find_adjustment(plan, "fallback");
  ASSERT_NE(fallback, nullptr);
  EXPECT_THAT(fallback->reason, HasSubstr("no fork-join"));
}

TEST(Pipeline, BalancesStagesAndCutsAcrossSeveralLiveTensors) {
  ScratchDir dir;
  const Graph g = testing::chain_model(6);
  const auto whole = testing::run_whole(g, 2);
  for (int n : {2, 3, 4}) {
    SplitOptions o;
    o.nodes = n;
    o.strategy = "pipeline";
    o.objective = Objective::Throughput;
    Plan plan;
    EXPECT_TRUE(
        same_bytes(testing::run_split(g, o, dir.path() / std::to_string(n), 2, &plan), whole));
    ASSERT_EQ(plan.fragments.size(), static_cast<std::size_t>(n));
    // Six equal convs: stages differ by at most one conv.
    std::vector<std::int64_t> macs;
    for (const auto& f : plan.fragments) macs.push_back(f.cost.macs);
    const auto [lo, hi] = std::minmax_element(macs.begin(), macs.end());
    EXPECT_LE(*hi - *lo, plan.fragments.front().cost.macs) << n;
    for (const auto& f : plan.fragments) EXPECT_EQ(f.oracle_verdict, "dpu");
  }
  // A skip connection over two convs: a cut inside it crosses the skip and the conv chain,
  // so five units make four stages, and the skip goes straight from the stage producing it
  // to the stage adding it, passing no stage in between.
  GraphBuilder b("skip");
  Value x = b.input("x", {1, 8, 8, 8}, 5);
  x = testing::conv(b, "a", x, 8);
  Value y = testing::conv(b, "b", x, 8);
  y = testing::conv(b, "c", y, 8);
  const Value s = b.add("sum", {x, y}, 5);
  testing::conv(b, "d", s, 8);
  const Graph skip = b.finish();
  SplitOptions o;
  o.nodes = 4;
  o.strategy = "pipeline";
  Plan plan;
  EXPECT_TRUE(same_bytes(testing::run_split(skip, o, dir.path() / "skip", 5, &plan),
                         testing::run_whole(skip, 5)));
  ASSERT_EQ(plan.fragments.size(), 4u);
  EXPECT_EQ(find_adjustment(plan, "fewer_stages"), nullptr);
  EXPECT_THAT(plan.structure, HasSubstr("crosses 2 tensors"));
  // a_fix goes to b's stage and to the sum's, both times from stage0.
  std::vector<std::string> readers;
  for (const auto& e : plan.edges)
    if (e.output == "a_fix") {
      EXPECT_EQ(e.from, "stage0");
      readers.push_back(e.to);
    }
  ASSERT_EQ(readers.size(), 2u);
  EXPECT_EQ(readers[0], "stage1");
  EXPECT_TRUE(readers[1] == "stage2" || readers[1] == "stage3") << readers[1];
  EXPECT_EQ(plan.fragment(readers[1]).inputs.size(), 2u);  // the skip and c's output
  int a_fix_senders = 0;  // only its producer sends it: no stage forwards it
  for (const auto& f : plan.fragments)
    for (const auto& t : f.outputs) a_fix_senders += t.name == "a_fix";
  EXPECT_EQ(a_fix_senders, 1);
}

// A third stage would have to receive a tensor 8x bigger than any other boundary, so the
// link would become the bottleneck: two stages on three nodes, and the plan says why.
TEST(Pipeline, UsesFewerStagesWhereAnotherCutsTransfersWouldSlowIt) {
  ScratchDir dir;
  GraphBuilder b("wide");
  Value x = b.input("x", {1, 16, 16, 64}, 5);
  x = testing::conv(b, "a", x, 64);
  x = testing::conv(b, "b", x, 512, 1);  // 128 KB out
  testing::conv(b, "c", x, 8, 1);
  const Graph g = b.finish();
  SplitOptions o;
  o.nodes = 3;
  o.strategy = "pipeline";
  o.objective = Objective::Throughput;
  Plan plan;
  EXPECT_TRUE(same_bytes(testing::run_split(g, o, dir.path(), 4, &plan), testing::run_whole(g, 4)));
  ASSERT_EQ(plan.fragments.size(), 2u) << plan.structure;
  EXPECT_EQ(plan.fragments[0].outputs.at(0).name, "a_fix");
  const auto* fewer = find_adjustment(plan, "fewer_stages");
  ASSERT_NE(fewer, nullptr);
  EXPECT_THAT(fewer->reason, HasSubstr("transfers"));
}

TEST(Pipeline, RequestedCutsMoveToSafePointsOrGetAnExplicitFix) {
  ScratchDir dir;
  GraphBuilder b("cuts");
  Value x = b.input("x", {1, 8, 8, 8}, 5);
  x = testing::conv(b, "a", x, 8);
  const Value r = b.reshape("tokens", x, {1, 64, 8});
  const Value back = b.reshape("image", r, {1, 8, 8, 8});
  testing::conv(b, "b", back, 8);
  const Graph g = b.finish();
  const auto whole = testing::run_whole(g, 6);

  SplitOptions o;
  o.nodes = 2;
  o.strategy = "pipeline";
  o.cuts = {"a"};  // the conv itself: its value is a float inside conv -> relu -> fix
  Plan plan;
  EXPECT_TRUE(same_bytes(testing::run_split(g, o, dir.path() / "conv", 6, &plan), whole));
  const auto* moved = find_adjustment(plan, "moved_cut");
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(moved->to, "a_fix");
  EXPECT_THAT(moved->reason, HasSubstr("not produced by a fix"));

  o.cuts = {"tokens"};  // a layout op over a fix: an explicit fix is inserted after it
  EXPECT_TRUE(same_bytes(testing::run_split(g, o, dir.path() / "layout", 6, &plan), whole));
  const auto* inserted = find_adjustment(plan, "inserted_fix");
  ASSERT_NE(inserted, nullptr);
  EXPECT_EQ(inserted->at, "tokens");
  EXPECT_EQ(plan.fragments.front().outputs.front().name, "tokens");
  EXPECT_EQ(plan.fragments.front().oracle_verdict, "dpu");

  o.cuts = {"a_w"};
  EXPECT_THROW(split_model(g, o), Error);
  o.cuts = {"nope"};
  EXPECT_THROW(split_model(g, o), Error);
  o.cuts = {"a"};
  o.nodes = 1;
  EXPECT_THROW(split_model(g, o), Error);
}

// A requested cut inside a skip connection stays where it was asked (both live tensors
// cross it); one after the last unit moves before it.
TEST(Pipeline, RequestedCutsMayCrossSeveralTensors) {
  ScratchDir dir;
  GraphBuilder b("skip");
  Value x = b.input("x", {1, 8, 8, 8}, 5);
  x = testing::conv(b, "a", x, 8);
  Value y = testing::conv(b, "b", x, 8);
  y = testing::conv(b, "c", y, 8);
  testing::conv(b, "d", b.add("sum", {x, y}, 5), 8);
  const Graph g = b.finish();
  SplitOptions o;
  o.nodes = 2;
  o.strategy = "pipeline";
  o.cuts = {"b_fix"};
  Plan plan;
  EXPECT_TRUE(same_bytes(testing::run_split(g, o, dir.path() / "inside", 3, &plan),
                         testing::run_whole(g, 3)));
  EXPECT_EQ(find_adjustment(plan, "moved_cut"), nullptr);
  std::vector<std::string> inputs;
  for (const auto& t : plan.fragment("stage1").inputs) inputs.push_back(t.name);
  EXPECT_EQ(inputs, (std::vector<std::string>{"a_fix", "b_fix"}));

  o.cuts = {"d_fix"};
  EXPECT_TRUE(same_bytes(testing::run_split(g, o, dir.path() / "last", 3, &plan),
                         testing::run_whole(g, 3)));
  const auto* moved = find_adjustment(plan, "moved_cut");
  ASSERT_NE(moved, nullptr);
  EXPECT_THAT(moved->reason, HasSubstr("last unit"));
  EXPECT_EQ(plan.fragments.size(), 2u);
}

TEST(OutputFix, ALayoutModelOutputGetsAnExplicitFix) {
  ScratchDir dir;
  GraphBuilder b("flat");
  Value x = b.input("x", {1, 4, 4, 8}, 5);
  x = testing::conv(b, "a", x, 8);
  x = testing::conv(b, "b", x, 8);
  b.flatten("out", x, 1, 3);
  const Graph g = b.finish();
  SplitOptions o;
  o.nodes = 2;
  o.strategy = "pipeline";
  Plan plan;
  EXPECT_TRUE(same_bytes(testing::run_split(g, o, dir.path(), 8, &plan), testing::run_whole(g, 8)));
  const auto* inserted = find_adjustment(plan, "inserted_fix");
  ASSERT_NE(inserted, nullptr);
  EXPECT_EQ(inserted->at, "out");
  for (const auto& f : plan.fragments) EXPECT_EQ(f.oracle_verdict, "dpu") << f.name;
}

TEST(NaiveSplit, EndsBeforeTheFixRunsIdenticallyAndIsMarked) {
  ScratchDir dir;
  const Graph g = testing::chain_model(4);
  const auto whole = testing::run_whole(g, 9);
  SplitOptions o;
  o.nodes = 2;
  o.strategy = "pipeline";
  Plan fixed_plan, naive_plan;
  testing::run_split(g, o, dir.path() / "fixed", 9, &fixed_plan);
  o.output_fix = false;
  EXPECT_TRUE(same_bytes(testing::run_split(g, o, dir.path() / "naive", 9, &naive_plan), whole));
  EXPECT_FALSE(naive_plan.output_fix);
  const auto* naive = find_adjustment(naive_plan, "naive_cut");
  ASSERT_NE(naive, nullptr);
  const PlanTensor& out = naive_plan.fragments.front().outputs.front();
  EXPECT_FALSE(out.fixed);
  EXPECT_EQ(out.name, naive->to);  // the relu before the fix
  for (const auto& e : naive_plan.edges) {
    if (e.output == out.name) {
      EXPECT_EQ(e.bytes, out.element_count());  // int8 crosses: the runtime's __wire fix
    }
  }
  // The oracle sees the trailing conv go to the CPU, and the cost model charges for it.
  EXPECT_EQ(naive_plan.fragments.front().oracle_verdict, "cpu");
  EXPECT_GT(naive_plan.predicted.latency_ms, fixed_plan.predicted.latency_ms);
  EXPECT_GT(naive_plan.fragments.front().cost.compute_ms,
            fixed_plan.fragments.front().cost.compute_ms);
}

TEST(CostModel, RooflineFollowsItsParameters) {
  GraphBuilder b("one");
  const Value x = b.input("x", {1, 8, 8, 16}, 5);
  testing::conv(b, "c", x, 16, 3, false);
  const Graph g = b.finish();
  RooflineParams p;
  auto model = make_roofline_cost_model(p);
  const Op& c = g.op("c");
  const double macs = 8.0 * 8 * 16 * 9 * 16;
  const double bytes = 16.0 * 9 * 16 + 16 + 8 * 8 * 16 * 2;
  const double dpu = std::max(macs / (p.dpu_peak_gmacs * 1e9 * p.dpu_efficiency),
                              bytes / (p.ddr_gbytes_per_s * 1e9 * p.ddr_efficiency));
  EXPECT_NEAR(model->op_seconds(g, c, Device::Dpu), dpu, 1e-12);
  EXPECT_NEAR(model->op_seconds(g, c, Device::Cpu),
              macs / (p.cpu_gmacs * 1e9) + 2 * 8 * 8 * 16 * p.cpu_ns_per_element * 1e-9, 1e-12);
  EXPECT_NEAR(model->transfer_seconds(118'672'302),
              p.link_latency_ms * 1e-3 + 118'672'302 / (125e6 * p.link_efficiency), 1e-9);
  EXPECT_EQ(model->transfer_seconds(0), 0.0);
  p.link_gbps = 10;
  EXPECT_LT(make_roofline_cost_model(p)->transfer_seconds(1'000'000),
            model->transfer_seconds(1'000'000));
  p.link_gbps = 0;
  EXPECT_THROW(make_roofline_cost_model(p), Error);
}

TEST(Auto, PicksTheBestCandidateForTheObjective) {
  ScratchDir dir;
  const Graph g = testing::fork_join_model({3, 3, 3});
  for (Objective objective : {Objective::Latency, Objective::Throughput}) {
    SplitOptions o;
    o.nodes = 3;
    o.objective = objective;
    const SplitResult r = split_model(g, o);
    // replicate, pipeline, experts, and hybrid: not possible on 3 nodes (2 replicas of 2
    // nodes need 4), saying so.
    ASSERT_EQ(r.plan.candidates.size(), 4u);
    EXPECT_EQ(r.plan.candidates.back().strategy, "hybrid");
    EXPECT_THAT(r.plan.candidates.back().note, HasSubstr("need at least 4 nodes"));
    for (const auto& c : r.plan.candidates) {
      if (!c.note.empty()) continue;
      if (objective == Objective::Latency) {
        EXPECT_LE(r.plan.predicted.latency_ms, c.predicted.latency_ms + 1e-9) << c.strategy;
      } else {
        EXPECT_GE(r.plan.predicted.throughput_fps, c.predicted.throughput_fps - 1e-9) << c.strategy;
      }
    }
  }
  // Replicate: every node a whole model, throughput N times one node's.
  SplitOptions o;
  o.nodes = 4;
  o.strategy = "replicate";
  const SplitResult r = split_model(g, o);
  ASSERT_EQ(r.plan.fragments.size(), 1u);
  EXPECT_EQ(r.plan.fragments.front().nodes, (std::vector<int>{0, 1, 2, 3}));
  o.nodes = 1;
  const SplitResult one = split_model(g, o);
  EXPECT_GT(r.plan.predicted.throughput_fps, 2.0 * one.plan.predicted.throughput_fps);
}

// The estimate follows the runtime's routing (frame f on replica f mod R of a fragment):
// replicas of a link-bound 2-stage pipeline share its transfers (twice the throughput on
// twice the nodes; before, all of them were charged to the first replica's nodes), and a
// fragment on nodes {0, 1} feeding one on node 1 sends every other frame over the link.
TEST(Estimate, ReplicasShareTheirFragmentsTransfers) {
  GraphBuilder b("wide");
  Value x = b.input("x", {1, 8, 8, 1}, 5);
  x = testing::conv(b, "widen", x, 64, 1);  // 4096 bytes cross the cut, 64 go in and out
  testing::conv(b, "narrow", x, 1, 1);
  const Graph g = b.finish();
  RooflineParams params;
  params.link_gbps = 0.01;  // the link is the bottleneck
  auto cost = make_roofline_cost_model(params);
  const split::UnitGraph units(g, Oracle::builtin(), *cost);
  std::vector<split::UnitId> compute;
  for (split::UnitId u : units.order())
    if (!units.unit(u).is_input) compute.push_back(u);
  ASSERT_EQ(compute.size(), 2u);
  split::Partition two;
  two.strategy = "pipeline";
  two.fragments = {{"stage0", "stage", {compute[0]}, {0}, {}},
                   {"stage1", "stage", {compute[1]}, {1}, {}}};
  const auto one = split::estimate(units, two, *cost, true).predicted;
  EXPECT_EQ(one.wire_bytes_per_frame, 4096);
  EXPECT_NEAR(one.throughput_fps, 1.0 / cost->link_busy_seconds(4096), 1e-6 * one.throughput_fps);

  const auto hybrid = split::estimate(units, split::plan_hybrid(two, 2, 2), *cost, true).predicted;
  EXPECT_EQ(hybrid.wire_bytes_per_frame, 4096);
  EXPECT_NEAR(hybrid.latency_ms, one.latency_ms, 1e-9);
  EXPECT_NEAR(hybrid.throughput_fps, 2 * one.throughput_fps, 1e-6 * hybrid.throughput_fps);

  split::Partition mixed = two;
  mixed.fragments[0].nodes = {0, 1};  // frame 0: node 0 -> node 1; frame 1: on node 1
  const auto half = split::estimate(units, mixed, *cost, true).predicted;
  EXPECT_EQ(half.wire_bytes_per_frame, 2048);
  // Node 1 receives half the cut's bytes (and half the model's input): close to 2x.
  EXPECT_GT(half.throughput_fps, 1.9 * one.throughput_fps);
  EXPECT_LE(half.throughput_fps, 2 * one.throughput_fps);
}

// Hybrid: R replicas of an experts or pipeline plan on k nodes, replica r on nodes
// r*k..r*k+k-1 (nodes[r] of every fragment in replica r), bit-identical to the whole model.
// Each replica's nodes carry 1/R of the frames: the same latency as the inner plan on k
// nodes, R times its throughput unless the orchestrator's link limits it.
TEST(Hybrid, ReplicasOfAModelParallelPlanOnNodesOfTheirOwn) {
  ScratchDir dir;
  const Graph g = testing::fork_join_model({3, 3, 3});
  const auto whole = testing::run_whole(g, 5);
  int n = 0;
  for (int replicas : {2, 3}) {
    for (Objective objective : {Objective::Latency, Objective::Throughput}) {
      const std::string what =
          std::to_string(replicas) + " replicas, " + std::string(objective_name(objective));
      SplitOptions o;
      o.nodes = 6;
      o.strategy = "hybrid";
      o.objective = objective;
      o.replicas = replicas;
      Plan plan;
      const auto got = testing::run_split(g, o, dir.path() / ("h" + std::to_string(n++)), 5, &plan);
      EXPECT_TRUE(same_bytes(got, whole)) << what;
      ASSERT_EQ(plan.strategy, "hybrid") << what;
      EXPECT_EQ(plan.requested_strategy, "hybrid");
      EXPECT_EQ(plan.replicas, replicas) << what;
      const int k = 6 / replicas;
      for (const auto& f : plan.fragments) {
        ASSERT_EQ(f.nodes.size(), static_cast<std::size_t>(replicas)) << what << " " << f.name;
        for (int r = 0; r < replicas; ++r) {
          EXPECT_EQ(f.nodes[static_cast<std::size_t>(r)] / k, r) << what << " " << f.name;
          EXPECT_EQ(f.nodes[static_cast<std::size_t>(r)] % k, f.nodes.front()) << what;
        }
      }
      // The same plan as the inner strategy on k nodes, replicated.
      SplitOptions inner = o;
      inner.nodes = k;
      inner.replicas = 0;
      inner.strategy = parse_strategy(plan.inner_strategy);
      const Plan one = split_model(g, inner).plan;
      ASSERT_EQ(one.fragments.size(), plan.fragments.size()) << what;
      for (std::size_t f = 0; f < one.fragments.size(); ++f) {
        EXPECT_EQ(one.fragments[f].name, plan.fragments[f].name) << what;
        EXPECT_EQ(one.fragments[f].nodes.front(), plan.fragments[f].nodes.front()) << what;
      }
      EXPECT_NEAR(plan.predicted.latency_ms, one.predicted.latency_ms, 1e-9) << what;
      EXPECT_EQ(plan.predicted.wire_bytes_per_frame, one.predicted.wire_bytes_per_frame) << what;
      SplitOptions rep = o;
      rep.strategy = "replicate";
      rep.replicas = 0;
      const double io_bound = split_model(g, rep).plan.predicted.throughput_fps;
      EXPECT_NEAR(plan.predicted.throughput_fps,
                  std::min(replicas * one.predicted.throughput_fps, io_bound),
                  1e-6 * plan.predicted.throughput_fps)
          << what;
    }
  }
}

// Auto records every hybrid (the pipelined experts on all nodes; R x k for R, k >= 2 with
// experts and pipeline inside, and pipelined experts where a replica has more nodes than
// branches) beside the other strategies, each with its prediction, and picks the best.
TEST(Hybrid, AutoRecordsEveryHybridCandidate) {
  const Graph g = testing::fork_join_model({3, 3, 3});
  for (Objective objective : {Objective::Latency, Objective::Throughput}) {
    SplitOptions o;
    o.nodes = 6;
    o.objective = objective;
    const Plan plan = split_model(g, o).plan;
    std::vector<std::string> labels;
    for (const auto& c : plan.candidates) {
      labels.push_back(c.label());
      EXPECT_TRUE(c.note.empty()) << c.label() << ": " << c.note;
      if (objective == Objective::Latency) {
        EXPECT_LE(plan.predicted.latency_ms, c.predicted.latency_ms + 1e-9) << c.label();
      } else {
        EXPECT_GE(plan.predicted.throughput_fps, c.predicted.throughput_fps - 1e-9) << c.label();
      }
    }
    EXPECT_EQ(labels, (std::vector<std::string>{"replicate", "pipeline", "experts",
                                                "hybrid pipelined-experts", "hybrid 2x experts",
                                                "hybrid 2x pipeline", "hybrid 3x experts",
                                                "hybrid 3x pipeline"}));
  }
  // Nodes left over stay idle: 7 nodes hold 2 x 3 and 3 x 2, each with one idle node.
  SplitOptions seven;
  seven.nodes = 7;
  const Plan odd = split_model(g, seven).plan;
  std::vector<std::string> labels;
  for (const auto& c : odd.candidates) labels.push_back(c.label());
  EXPECT_EQ(labels,
            (std::vector<std::string>{
                "replicate", "pipeline", "experts", "hybrid pipelined-experts", "hybrid 2x experts",
                "hybrid 2x pipeline", "hybrid 3x experts", "hybrid 3x pipeline"}));
  seven.strategy = "hybrid";
  seven.replicas = 3;
  const Plan three = split_model(g, seven).plan;
  EXPECT_EQ(three.replicas, 3);
  for (const auto& f : three.fragments)
    for (int n : f.nodes) EXPECT_LT(n, 6) << f.name;
  const auto* idle = find_adjustment(three, "idle_nodes");
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->reason, HasSubstr("1 node stays idle"));

  // A hybrid that cannot be: --replicas leaving fewer than 2 nodes each, or on 3 nodes.
  SplitOptions o;
  o.nodes = 6;
  o.strategy = "hybrid";
  o.replicas = 4;
  EXPECT_THROW(split_model(g, o), Error);
  o.strategy = "experts";
  o.replicas = 2;
  EXPECT_THROW(split_model(g, o), Error);
  o.nodes = 3;
  o.strategy = "hybrid";
  o.replicas = 0;
  const Plan fallback = split_model(g, o).plan;
  EXPECT_EQ(fallback.strategy, "replicate");
  ASSERT_FALSE(fallback.adjustments.empty());
  EXPECT_EQ(fallback.adjustments.back().kind, "fallback");
  EXPECT_THAT(fallback.adjustments.back().reason, HasSubstr("hybrid is not possible"));
}

// Experts whose branches are pipelined: the node slots beyond one per branch go to the
// branches with the most time per stage, each such branch cut into stages on nodes of their
// own; bit-identical to the whole model, and faster than the experts plan, which leaves
// the extra nodes idle.
TEST(Hybrid, PipelinedExpertsGiveTheCostliestBranchMoreNodes) {
  ScratchDir dir;
  const Graph g = testing::fork_join_model({6, 2, 2});
  const auto whole = testing::run_whole(g, 7);
  // A slow DPU, so the toy convs outweigh the fixed cost of a fragment and of a transfer.
  RooflineParams slow;
  slow.dpu_peak_gmacs = 0.05;
  const auto cost = make_roofline_cost_model(slow);
  SplitOptions o;
  o.cost_model = cost.get();
  o.nodes = 4;
  o.strategy = "hybrid";
  o.replicas = 1;
  o.objective = Objective::Throughput;
  Plan plan;
  const auto got = testing::run_split(g, o, dir.path() / "pe", 7, &plan);
  EXPECT_TRUE(same_bytes(got, whole));
  ASSERT_EQ(plan.strategy, "hybrid");
  EXPECT_EQ(plan.inner_strategy, "pipelined-experts");
  EXPECT_EQ(plan.replicas, 1);
  std::vector<std::string> names;
  std::set<int> branch_nodes;
  for (const auto& f : plan.fragments) {
    names.push_back(f.name);
    ASSERT_EQ(f.nodes.size(), 1u) << f.name;
    if (f.role == "experts") {
      EXPECT_TRUE(branch_nodes.insert(f.nodes.front()).second) << f.name;
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"stem", "experts0_stage0", "experts0_stage1",
                                             "experts1", "experts2", "tail"}));
  EXPECT_EQ(branch_nodes.size(), 4u) << "every node runs one branch fragment";
  EXPECT_THAT(plan.fragment("experts0_stage1").branches.at(0), HasSubstr("stage 2 of 2"));
  EXPECT_THAT(plan.structure, HasSubstr("branch 0 in 2 stages"));
  // The longest branch's 6 convs are cut 3 + 3: half the bottleneck of the experts plan.
  SplitOptions experts = o;
  experts.strategy = "experts";
  experts.replicas = 0;
  const Plan plain = split_model(g, experts).plan;
  EXPECT_GT(plan.predicted.throughput_fps, 1.3 * plain.predicted.throughput_fps)
      << plan.structure << " vs " << plain.structure;

  // Six nodes for three equal branches: two stages each.
  const Graph even = testing::fork_join_model({2, 2, 2});
  o.nodes = 6;
  const auto even_whole = testing::run_whole(even, 7);
  Plan six;
  EXPECT_TRUE(same_bytes(testing::run_split(even, o, dir.path() / "pe6", 7, &six), even_whole));
  names.clear();
  for (const auto& f : six.fragments)
    if (f.role == "experts") names.push_back(f.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"experts0_stage0", "experts0_stage1", "experts1_stage0",
                                      "experts1_stage1", "experts2_stage0", "experts2_stage1"}));
}

// Where pipelined experts cannot be, --strategy hybrid says why and falls back.
TEST(Hybrid, PipelinedExpertsSayWhyTheyAreNotPossible) {
  SplitOptions o;
  o.strategy = "hybrid";
  o.replicas = 1;
  o.nodes = 3;
  const Plan three = split_model(testing::fork_join_model({2, 2, 2}), o).plan;
  EXPECT_EQ(three.strategy, "replicate");
  const auto* fallback = find_adjustment(three, "fallback");
  ASSERT_NE(fallback, nullptr);
  EXPECT_THAT(fallback->reason, HasSubstr("3 branches on 3 nodes: no node is left to pipeline"));
  EXPECT_THAT(fallback->reason, HasSubstr("need at least 4 nodes"));
  o.nodes = 4;
  const Plan single = split_model(testing::fork_join_model({1, 1, 1}), o).plan;
  EXPECT_EQ(single.strategy, "replicate");
  fallback = find_adjustment(single, "fallback");
  ASSERT_NE(fallback, nullptr);
  EXPECT_THAT(fallback->reason, HasSubstr("every branch is a single unit"));
  // Replicas of pipelined experts, where a replica has more nodes than branches.
  SplitOptions eight;
  eight.nodes = 8;
  std::vector<std::string> labels;
  for (const auto& c : split_model(testing::fork_join_model({2, 2, 2}), eight).plan.candidates) {
    labels.push_back(c.label());
    EXPECT_TRUE(c.note.empty()) << c.label() << ": " << c.note;
  }
  EXPECT_THAT(labels, ::testing::Contains("hybrid 2x pipelined-experts"));
  // --replicas 1 leaves the replicas out; 0 tries them too.
  o.replicas = 0;
  o.objective = Objective::Throughput;
  const Plan any = split_model(testing::fork_join_model({2, 2, 2}), o).plan;
  EXPECT_EQ(any.strategy, "hybrid");
  EXPECT_EQ(any.candidates.size(), 6u);  // 2x pipelined-experts: 3 branches on 2 nodes
}

TEST(Split, RefusesWhatItCannotSplit) {
  SplitOptions o;
  o.nodes = 0;
  EXPECT_THROW(split_model(testing::chain_model(2), o), Error);
  o.nodes = 2;
  o.strategy = "experts";
  o.cuts = {"c0"};
  EXPECT_THROW(split_model(testing::chain_model(2), o), Error);
}

}  // namespace
}  // namespace dpushard
