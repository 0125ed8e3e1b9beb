// The planner priced with the KV260 timing model (make_timing_cost_model): fragment costs
// are `predict` of the fragment files, a pipeline's latency is the sum of its fragments and
// transfers and its throughput the busiest resource, auto follows the link speed, and a
// --no-output-fix fragment carries the boundary penalty (its trailing conv on the CPU).

#include <gtest/gtest.h>

#include <map>

#include <algorithm>
#include <string>

#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "split/split_helpers.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::ScratchDir;

const Target& kv260() {
  static const Target t = builtin_target("kv260");
  return t;
}

Graph small_cnn(int experts, std::array<std::int64_t, 3> input = {32, 32, 3}) {
  ZooSpec spec;
  spec.params = 1'000'000;
  spec.experts = experts;
  spec.input = input;
  spec.classes = 10;
  return make_cnn(spec);
}

Plan split_with(const Graph& model, const CostModel& cost, const std::string& strategy, int nodes,
                const std::filesystem::path& dir, bool output_fix = true,
                Objective objective = Objective::Latency) {
  SplitOptions o;
  o.nodes = nodes;
  o.strategy = strategy;
  o.objective = objective;
  o.output_fix = output_fix;
  o.cost_model = &cost;
  SplitResult result = split_model(model, o);
  write_split(result, dir);
  return read_plan(dir);
}

double fragment_file_ms(const std::filesystem::path& dir, const PlanFragment& f) {
  return predict_fragment_ms(read_xmodel(dir / f.file), kv260());
}

std::int64_t edge_bytes(const Plan& plan, const std::string& from, const std::string& to) {
  std::int64_t bytes = 0;
  for (const auto& e : plan.edges)
    if (e.from == from && e.to == to) bytes += e.bytes;
  return bytes;
}

TEST(TimingCost, RecordsItselfAndPricesTransfersAtTheLinkSpeed) {
  TimingCostParams p;
  p.link_gbps = 2.5;
  const auto cost = make_timing_cost_model(kv260(), p);
  EXPECT_EQ(cost->name(), "timing:kv260");
  EXPECT_TRUE(cost->prices_fragments());
  EXPECT_EQ(cost->parameters().at("link_gbps"), 2.5);
  EXPECT_EQ(cost->parameters().at("clock_mhz"), kv260().clock_mhz);
  EXPECT_EQ(cost->parameters().at("compute_efficiency"), kv260().compute_efficiency);
  EXPECT_NEAR(cost->transfer_seconds(1'000'000),
              p.link_latency_ms * 1e-3 + 1e6 * 8 / (2.5e9 * p.link_efficiency), 1e-12);
  EXPECT_NEAR(cost->link_busy_seconds(1'000'000), 1e6 * 8 / (2.5e9 * p.link_efficiency), 1e-12);
  EXPECT_EQ(cost->transfer_seconds(0), 0.0);
  EXPECT_THROW(make_roofline_cost_model()->fragment_seconds(small_cnn(1)), Error);
  p.link_gbps = 0;
  EXPECT_THROW(make_timing_cost_model(kv260(), p), Error);
}

TEST(TimingCost, FragmentCostsArePredictOfTheFragmentFiles) {
  ScratchDir dir;
  const Graph model = small_cnn(3);
  const auto cost = make_timing_cost_model(kv260());
  int k = 0;
  for (const std::string s : {"experts", "pipeline", "replicate"})
    for (int nodes : {2, 3}) {
      const auto where = dir.path() / std::to_string(k++);
      const Plan plan = split_with(model, *cost, s, nodes, where);
      EXPECT_EQ(plan.strategy, s);
      EXPECT_EQ(plan.cost_model, "timing:kv260");
      EXPECT_EQ(plan.cost_parameters.at("per_subgraph_us"), kv260().per_subgraph_us);
      EXPECT_EQ(plan.link_gbps, 1.0);
      for (const auto& f : plan.fragments) {
        const double want = fragment_file_ms(where, f);
        EXPECT_GT(want, 0) << f.name;
        EXPECT_NEAR(f.cost.compute_ms, want, 1e-9 * want) << f.name;
      }
    }
  // The roofline's prices differ (it knows neither padding nor subgraph launches alike).
  const Plan roof = [&] {
    SplitOptions o;
    o.nodes = 2;
    o.strategy = "pipeline";
    SplitResult r = split_model(model, o);
    return r.plan;
  }();
  EXPECT_EQ(roof.cost_model, "roofline");
}

// Candidates are priced on fragments extracted without their weights; the chosen plan on
// the real fragments. Both must give the same prediction, or the choice would be made on
// numbers the plan does not have.
TEST(TimingCost, CandidatesPricedWithoutWeightsMatchTheChosenPlan) {
  const Graph model = small_cnn(3);
  const auto cost = make_timing_cost_model(kv260());
  for (const std::string s : {"experts", "pipeline", "replicate"})
    for (int nodes : {2, 3}) {
      SplitOptions o;
      o.nodes = nodes;
      o.strategy = s;
      o.cost_model = cost.get();
      const SplitResult result = split_model(model, o);
      const auto chosen =
          std::find_if(result.plan.candidates.begin(), result.plan.candidates.end(),
                       [&](const PlanCandidate& c) { return c.strategy == result.plan.strategy; });
      ASSERT_NE(chosen, result.plan.candidates.end()) << s << " " << nodes;
      EXPECT_EQ(chosen->predicted, result.plan.predicted) << s << " " << nodes;
      EXPECT_GT(result.plan.predicted.latency_ms, 0);
    }
}

// A 2-stage pipeline on two nodes: latency = in + stage0 + boundary + stage1 + out (a cut
// crossing several tensors sends each on its own, so the slowest of them counts), and the
// throughput is set by the busiest of the two nodes and the three links.
TEST(TimingCost, PipelineLatencyIsTheSumOfPredictAndTransfers) {
  ScratchDir dir;
  const Graph model = small_cnn(1);
  for (double gbps : {1.0, 0.1}) {
    TimingCostParams p;
    p.link_gbps = gbps;
    const auto cost = make_timing_cost_model(kv260(), p);
    const auto where = dir.path() / std::to_string(gbps);
    const Plan plan = split_with(model, *cost, "pipeline", 2, where);
    ASSERT_EQ(plan.fragments.size(), 2u);
    const auto& s0 = plan.fragments[0];
    const auto& s1 = plan.fragments[1];
    ASSERT_NE(s0.nodes, s1.nodes);
    const double f0 = fragment_file_ms(where, s0) * 1e-3;
    const double f1 = fragment_file_ms(where, s1) * 1e-3;
    const std::int64_t in = edge_bytes(plan, "model", s0.name);
    const std::int64_t mid = edge_bytes(plan, s0.name, s1.name);
    const std::int64_t out = edge_bytes(plan, s1.name, "model");
    ASSERT_GT(in, 0);
    ASSERT_GT(mid, 0);
    ASSERT_GT(out, 0);
    EXPECT_EQ(plan.predicted.wire_bytes_per_frame, mid);
    EXPECT_EQ(plan.predicted.io_bytes_per_frame, in + out);
    double boundary = 0;
    for (const auto& e : plan.edges)
      if (e.from == s0.name && e.to == s1.name)
        boundary = std::max(boundary, cost->transfer_seconds(e.bytes));
    const double latency =
        cost->transfer_seconds(in) + f0 + boundary + f1 + cost->transfer_seconds(out);
    EXPECT_NEAR(plan.predicted.latency_ms, latency * 1e3, 1e-9) << gbps << " Gb/s";
    const double busiest = std::max({f0, f1, cost->link_busy_seconds(in),
                                     cost->link_busy_seconds(mid), cost->link_busy_seconds(out)});
    EXPECT_NEAR(plan.predicted.throughput_fps, 1.0 / busiest, 1e-6 / busiest) << gbps;
  }
}

// Latency first: with a fast link the experts' parallel branches pay; over a slow link every
// boundary tensor costs more than it saves and the whole model on one node wins. (The model
// is big enough that its experts' DPU time outweighs each fragment's host work.)
TEST(TimingCost, AutoFollowsTheLinkSpeed) {
  ScratchDir dir;
  ZooSpec spec;
  spec.params = 16'000'000;
  spec.experts = 2;
  spec.input = {112, 112, 3};
  spec.classes = 10;
  const Graph model = make_cnn(spec);
  std::map<double, Plan> plans;
  for (double gbps : {10.0, 0.01}) {
    TimingCostParams p;
    p.link_gbps = gbps;
    const auto cost = make_timing_cost_model(kv260(), p);
    plans[gbps] = split_with(model, *cost, "auto", 2, dir.path() / std::to_string(gbps));
    for (const auto& c : plans[gbps].candidates) {
      if (c.note.empty() && c.strategy != plans[gbps].strategy) {
        EXPECT_GE(c.predicted.latency_ms, plans[gbps].predicted.latency_ms) << c.strategy;
      }
    }
  }
  EXPECT_NE(plans[10.0].strategy, "replicate");
  EXPECT_GT(plans[10.0].predicted.wire_bytes_per_frame, 0);
  EXPECT_EQ(plans[0.01].strategy, "replicate");
  EXPECT_EQ(plans[0.01].predicted.wire_bytes_per_frame, 0);
}

// Issue 16's target for the pipeline: the zoo CNN (224x224) and ConvViT (112x112, the local
// sweep's sizes) at 20M parameters with 3 experts, on 3 KV260s at 1 Gbit/s. Cuts across the
// experts leave no stage more than 40 % of the predicted compute, and the pipeline's
// predicted throughput is at least 2.4 times one node's. The gated ConvViT runs all of it
// on the DPU in about 3 ms a frame, so its 100 KB cut tensors' TCP work on the A53 (not
// split by the cut) caps the gain lower: at least twice one node's. (About 1 s per model:
// the zoo model and its fragments are built in memory.)
TEST(TimingCost, PipelineBalancesTheZooExpertsAt20M) {
  const auto cost = make_timing_cost_model(kv260());
  struct Case {
    std::string name;
    ConvVitAttention attention;
    double min_gain;
  };
  for (const Case& c :
       {Case{"cnn", ConvVitAttention::Gated, 2.4}, Case{"convvit", ConvVitAttention::Softmax, 2.4},
        Case{"convvit", ConvVitAttention::Gated, 2.0}}) {
    ZooSpec spec;
    spec.params = 20'000'000;
    spec.experts = 3;
    spec.attention = c.attention;
    spec.input = c.name == "cnn" ? std::array<std::int64_t, 3>{224, 224, 3}
                                 : std::array<std::int64_t, 3>{112, 112, 3};
    const Graph model = c.name == "cnn" ? make_cnn(spec) : make_convvit(spec);
    const std::string family =
        c.name + (c.name == "cnn" ? "" : " " + std::string(convvit_attention_name(c.attention)));
    SplitOptions o;
    o.cost_model = cost.get();
    o.nodes = 1;
    const double one_node = split_model(model, o).plan.predicted.throughput_fps;
    o.nodes = 3;
    o.strategy = "pipeline";
    const Plan plan = split_model(model, o).plan;
    ASSERT_EQ(plan.strategy, "pipeline") << family;
    ASSERT_EQ(plan.fragments.size(), 3u) << family;
    double total = 0, busiest = 0;
    for (const auto& f : plan.fragments) {
      total += f.cost.compute_ms;
      busiest = std::max(busiest, f.cost.compute_ms);
    }
    EXPECT_LE(busiest / total, 0.40) << family << ": " << plan.structure;
    EXPECT_GE(plan.predicted.throughput_fps, c.min_gain * one_node)
        << family << ": " << plan.structure;
  }
}

// A node that runs two fragments (the experts plan's stem and first expert) runs each
// one's frames one after the other, but their DPU and A53 work overlap, as on a board and
// in the sim workers: the node's time per frame is less than the two fragments' sum, and
// no less than the longer of the two. (The planner used the sum: the CNN's experts plans
// measured 11-29 % faster than predicted.)
TEST(TimingCost, ANodesFragmentsOverlapOnItsEngines) {
  const auto cost = make_timing_cost_model(kv260());
  ZooSpec spec;
  spec.params = 20'000'000;
  spec.experts = 3;
  spec.input = {112, 112, 3};
  spec.attention = ConvVitAttention::Softmax;  // its A53 work is large enough to overlap
  const Graph model = make_convvit(spec);
  SplitOptions o;
  o.cost_model = cost.get();
  o.nodes = 2;
  o.strategy = "experts";
  const Plan plan = split_model(model, o).plan;
  std::map<int, std::vector<double>> node_ms;
  for (const auto& f : plan.fragments)
    if (f.nodes.size() == 1) node_ms[f.nodes.front()].push_back(f.cost.compute_ms);
  double serial = 0, longest = 0;
  for (const auto& [node, ms] : node_ms) {
    double sum = 0;
    for (double m : ms) {
      sum += m;
      longest = std::max(longest, m);
    }
    serial = std::max(serial, sum);
  }
  ASSERT_GT(serial, longest) << plan.structure;  // some node runs two fragments
  const double period_ms = 1000.0 / plan.predicted.throughput_fps;
  EXPECT_LT(period_ms, serial * 0.99) << plan.structure;
  EXPECT_GE(period_ms, longest * 0.999) << plan.structure;
}

// The engines serve whole jobs first come, first served: in each of its frames a fragment
// can find the DPU job of each other fragment of its node ahead of it, so its frames take
// its own DPU and A53 time plus the others' DPU time. On the 10M CNN's 3-node experts plan
// (stem and first expert on one node) that chain, not the engines' sums, sets the rate:
// the reference run measured 333 fps against 379 from the sums and 340 from the chain.
TEST(TimingCost, AFragmentWaitsForItsNodesOtherFragmentsOnTheDpu) {
  ScratchDir dir;
  ZooSpec spec;
  spec.params = 10'000'000;
  spec.experts = 3;
  spec.input = {224, 224, 3};
  const Graph model = make_cnn(spec);
  const auto cost = make_timing_cost_model(kv260());
  const Plan plan = split_with(model, *cost, "experts", 3, dir.path());
  std::map<int, std::vector<CostModel::FragmentLoad>> by_node;
  for (const auto& f : plan.fragments) {
    ASSERT_EQ(f.nodes.size(), 1u);
    by_node[f.nodes.front()].push_back(cost->fragment_load(read_xmodel(dir.path() / f.file)));
  }
  double chain = 0, sums = 0;
  for (const auto& [node, loads] : by_node) {
    double dpu = 0;
    for (const auto& l : loads) dpu += l.dpu_seconds;
    sums = std::max(sums, dpu);
    for (const auto& l : loads) {
      sums = std::max(sums, l.seconds);
      chain = std::max(chain, l.dpu_seconds + l.host_seconds + (dpu - l.dpu_seconds));
    }
  }
  EXPECT_GT(chain, 1.05 * sums) << plan.structure;  // a node holds two fragments
  EXPECT_NEAR(1.0 / plan.predicted.throughput_fps, chain, 1e-9) << plan.structure;
}

// --no-output-fix: the first stage ends before its fix, so `predict` moves its trailing
// conv to the CPU with the boundary slowdown, and the plan's cost says so too.
TEST(TimingCost, UnfixedBoundaryShowsInPredict) {
  ScratchDir dir;
  const Graph model = testing::chain_model(4, 32);
  const auto cost = make_timing_cost_model(kv260());
  const Plan fixed = split_with(model, *cost, "pipeline", 2, dir.path() / "fixed");
  const Plan naive = split_with(model, *cost, "pipeline", 2, dir.path() / "naive", false);
  ASSERT_EQ(naive.fragments.size(), 2u);
  ASSERT_FALSE(naive.fragments[0].outputs.at(0).fixed);

  const Graph with_fix_graph = read_xmodel(dir.path() / "fixed" / fixed.fragments[0].file);
  const Graph without_graph = read_xmodel(dir.path() / "naive" / naive.fragments[0].file);
  const Prediction with_fix = predict(with_fix_graph, kv260());
  const Prediction without = predict(without_graph, kv260());
  EXPECT_EQ(with_fix.cpu_ms, 0.0);
  int trailing = 0;
  for (const auto& t : without.ops) {
    if (t.engine != Device::Cpu) continue;
    ++trailing;
    EXPECT_NE(t.cpu_reason.find("output not produced by a fix op"), std::string::npos);
    // A conv the DPU could run, priced at its DPU time times the boundary slowdown.
    const auto on_dpu = time_op(without_graph, without_graph.op(t.op), kv260(), Device::Dpu);
    ASSERT_TRUE(on_dpu.has_value());
    EXPECT_EQ(on_dpu->engine, Device::Dpu);
    EXPECT_NEAR(t.ms, on_dpu->ms * kv260().boundary_slowdown, 1e-9 * t.ms);
  }
  EXPECT_EQ(trailing, 1) << "the trailing conv, and only it";
  EXPECT_GT(without.cpu_ms, 0.0);
  // The planner prices a fragment as a worker runs it: tensors over TCP, one frame at a time.
  PredictOptions worker;
  worker.io = HostIo::Network;
  const double worker_ms = predict(without_graph, kv260(), worker).worker_ms;
  EXPECT_NEAR(naive.fragments[0].cost.compute_ms, worker_ms, 1e-9 * worker_ms);
  EXPECT_GT(naive.predicted.latency_ms, fixed.predicted.latency_ms);
}

}  // namespace
}  // namespace dpushard
