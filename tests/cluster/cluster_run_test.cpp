// Plans from the splitter run on three in-process workers over loopback: outputs are
// bit-identical to the whole model on one backend, fragments are uploaded once, and
// failures end the run naming the node.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <tuple>

#include "cluster/job_layout.hpp"
#include "cluster/steady_rate.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/net/client.hpp"
#include "dpushard/plan/local_run.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "net/test_client.hpp"

namespace dpushard::cluster {
namespace {

using net::testing::fresh_dir;
using net::testing::test_worker_options;
using net::testing::WorkerThread;
using namespace std::chrono_literals;

Graph small_model(const std::string& family, std::uint64_t seed = 7) {
  ZooSpec spec;
  spec.params = family == "cnn" ? 300'000 : 250'000;
  spec.experts = 3;
  spec.input = {32, 32, 3};
  spec.classes = 10;
  spec.seed = seed;
  return family == "cnn" ? make_cnn(spec) : make_convvit(spec);
}

// The outputs' sha256 of the whole model on `ref` for the inputs of `seed`.
std::vector<std::string> reference_hashes(const Graph& model, std::uint64_t seed) {
  auto backend = make_backend("ref");
  backend->load(model);
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(model))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, seed));
  std::vector<std::string> hashes;
  for (const QTensor& output : backend->run(inputs)) hashes.push_back(sha256_hex(output.data));
  return hashes;
}

class ClusterRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_builtin_backends();  // the cpu-worker test asks for "cpu" by name
    root_ = new std::filesystem::path(fresh_dir("cluster"));
    workers_ = new std::vector<std::unique_ptr<WorkerThread>>();
    for (int i = 0; i < 3; ++i)
      workers_->push_back(std::make_unique<WorkerThread>(
          test_worker_options(*root_ / ("cache" + std::to_string(i)))));
    models_ = new std::map<std::string, Graph>();
    for (const char* family : {"cnn", "convvit"}) (*models_)[family] = small_model(family);
  }
  static void TearDownTestSuite() {
    delete workers_;
    delete models_;
    std::filesystem::remove_all(*root_);
    delete root_;
  }

  static ClusterConfig cluster(const std::string& token = "secret") {
    ClusterConfig config;
    config.source = "test-cluster.yaml";
    config.token = token;
    for (std::size_t i = 0; i < workers_->size(); ++i)
      config.nodes.push_back(NodeConfig{"w" + std::to_string(i),
                                        "127.0.0.1:" + std::to_string((*workers_)[i]->port()),
                                        "ref", "host", static_cast<int>(i + 2)});
    return config;
  }

  // Splits the family's model and writes the plan into its own folder.
  static std::pair<Plan, std::filesystem::path> plan_for(const std::string& family,
                                                         const std::string& strategy, int nodes,
                                                         bool output_fix = true) {
    SplitOptions options;
    options.nodes = nodes;
    options.strategy = strategy;
    options.output_fix = output_fix;
    SplitResult split = split_model(models_->at(family), options);
    const auto dir = *root_ / (family + "-" + strategy + "-" + std::to_string(nodes) + "-" +
                               std::to_string(++plans_));
    return {write_split(split, dir), dir};
  }

  static RunOptions quick(std::int64_t frames = 6, int inflight = 3) {
    RunOptions options;
    options.frames = frames;
    options.inflight = inflight;
    options.hash_every_frame = true;
    return options;
  }

  // Runs `plan` on the three workers and a fourth of its own (cache folder `cache`), and
  // checks every frame's outputs against the whole model's (frame f: seed f mod 4).
  static RunResult run_on_four_workers(const Graph& model, const Plan& plan,
                                       const std::filesystem::path& dir, const std::string& cache,
                                       std::int64_t frames) {
    WorkerThread fourth(test_worker_options(*root_ / cache));
    ClusterConfig config = cluster();
    config.nodes.push_back(
        NodeConfig{"w3", "127.0.0.1:" + std::to_string(fourth.port()), "ref", "host", 5});
    RunResult result = run_on_cluster(plan, dir, config, quick(frames, 3));
    for (std::uint64_t frame = 0; result.complete && frame < static_cast<std::uint64_t>(frames);
         ++frame) {
      EXPECT_EQ(result.frame_output_sha256[frame], reference_hashes(model, frame % 4))
          << "frame " << frame;
    }
    return result;
  }

  static inline std::filesystem::path* root_ = nullptr;
  static inline std::vector<std::unique_ptr<WorkerThread>>* workers_ = nullptr;
  static inline std::map<std::string, Graph>* models_ = nullptr;
  static inline int plans_ = 0;
};

using Case = std::tuple<std::string, std::string, int>;

class BitIdentical : public ClusterRunTest, public ::testing::WithParamInterface<Case> {};

TEST_P(BitIdentical, OutputsMatchTheWholeModel) {
  const auto& [family, strategy, nodes] = GetParam();
  const auto [plan, dir] = plan_for(family, strategy, nodes);
  const RunResult result = run_on_cluster(plan, dir, cluster(), quick());
  ASSERT_TRUE(result.complete) << result.error;
  EXPECT_EQ(result.frames_completed, 6);
  const Graph& model = models_->at(family);
  for (std::uint64_t frame = 0; frame < 6; ++frame)
    EXPECT_EQ(result.frame_output_sha256[frame], reference_hashes(model, frame % 4))
        << "frame " << frame;
  EXPECT_EQ(result.output_sha256, reference_hashes(model, 0));
  ASSERT_EQ(result.nodes.size(), static_cast<std::size_t>(plan.nodes));
  for (const NodeResult& node : result.nodes) {
    EXPECT_GT(node.frames_computed, 0u) << node.name;
    EXPECT_GT(node.busy_ms, 0.0) << node.name;
  }
  EXPECT_GT(result.wire_bytes_per_frame, 0.0);
  EXPECT_GT(result.throughput_fps, 0.0);
  EXPECT_LE(result.latency_p50_ms, result.latency_p99_ms);
}

std::string case_name(const ::testing::TestParamInfo<Case>& param_info) {
  const auto& [family, strategy, nodes] = param_info.param;
  return family + "_" + strategy + "_" + std::to_string(nodes);
}

INSTANTIATE_TEST_SUITE_P(Plans, BitIdentical,
                         ::testing::Values(Case{"cnn", "experts", 3}, Case{"cnn", "experts", 1},
                                           Case{"cnn", "pipeline", 2}, Case{"cnn", "pipeline", 3},
                                           Case{"cnn", "replicate", 3},
                                           Case{"convvit", "experts", 3},
                                           Case{"convvit", "pipeline", 2}),
                         case_name);

// A 3-stage pipeline of the 3-expert CNN cut after the first and after the second expert:
// stage2 receives several tensors, two of them from stage0 past stage1 (the stem's output
// the third expert reads, the first expert's output the join reads). Each goes straight
// from the node producing it to the node reading it (stage1 forwards nothing), and the
// outputs are the whole model's bits.
TEST_F(ClusterRunTest, MultiInputStageGetsEveryTensorFromItsProducer) {
  const Graph& model = models_->at("cnn");
  const auto join = std::find_if(model.ops().begin(), model.ops().end(),
                                 [](const Op& op) { return op.type == "concat"; });
  ASSERT_NE(join, model.ops().end());
  SplitOptions options;
  options.nodes = 3;
  options.strategy = "pipeline";
  options.cuts = {join->producers("input").at(0), join->producers("input").at(1)};
  SplitResult split = split_model(model, options);
  const auto dir = *root_ / "cnn-pipeline-cut-after-experts";
  const Plan plan = write_split(split, dir);
  ASSERT_EQ(plan.fragments.size(), 3u);
  std::map<std::string, std::int64_t> sends;  // bytes per frame each fragment sends
  std::size_t skipping = 0, most_inputs = 0;
  for (const PlanEdge& e : plan.edges) {
    if (e.from != "model") sends[e.from] += e.bytes;
    skipping += e.from == "stage0" && e.to == "stage2";
  }
  for (const auto& f : plan.fragments) most_inputs = std::max(most_inputs, f.inputs.size());
  ASSERT_GT(skipping, 0u) << plan.structure;
  ASSERT_GE(most_inputs, 2u) << plan.structure;

  constexpr std::int64_t kFrames = 6;
  const RunResult result = run_on_cluster(plan, dir, cluster(), quick(kFrames, 3));
  ASSERT_TRUE(result.complete) << result.error;
  for (std::uint64_t frame = 0; frame < kFrames; ++frame)
    EXPECT_EQ(result.frame_output_sha256[frame], reference_hashes(model, frame % 4))
        << "frame " << frame;
  // What each node sends is its own fragment's outputs (plus small frame headers): stage1
  // does not carry stage0's tensors on to stage2.
  ASSERT_EQ(result.nodes.size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    const std::string stage = "stage" + std::to_string(k);
    const auto payload = static_cast<std::uint64_t>(sends[stage] * kFrames);
    const NodeResult& node = result.nodes[k];
    ASSERT_EQ(node.fragments, std::vector<std::string>{stage});
    EXPECT_GE(node.tensor_bytes_sent, payload) << stage;
    EXPECT_LT(node.tensor_bytes_sent, payload + 1024 * kFrames) << stage;
  }
}

// Real inputs (RunOptions::frame_inputs): frame f is seed 100 + f; frame 2 cannot be read
// and frame 5 has another shape than the plan's input: both are skipped, with their
// message, and every other frame's outputs are handed back once, the whole model's.
TEST_F(ClusterRunTest, RealInputsComeBackOnceAsTheWholeModelsOutputsAndUnreadableOnesAreSkipped) {
  const Graph& model = models_->at("cnn");
  const auto [plan, dir] = plan_for("cnn", "pipeline", 3);
  RunOptions options = quick(7, 3);
  options.frame_inputs = [&plan](std::uint64_t frame) {
    if (frame == 2) throw Error("frame2.npy: unreadable");
    std::vector<QTensor> inputs;
    for (const PlanTensor& t : plan.model_inputs) {
      auto shape = t.shape;
      if (frame == 5) shape.back() += 1;
      inputs.push_back(random_qtensor(t.name, shape, t.fix_point, 100 + frame));
    }
    return inputs;
  };
  std::vector<std::uint64_t> skipped;
  std::string skip_message;
  options.frame_skipped = [&](std::uint64_t frame, const std::string& error) {
    skipped.push_back(frame);
    skip_message += error + "\n";
  };
  std::map<std::uint64_t, std::vector<std::string>> handed_back;
  options.frame_outputs = [&](std::uint64_t frame, std::vector<QTensor> outputs) {
    EXPECT_EQ(handed_back.count(frame), 0u) << "frame " << frame << " handed back twice";
    ASSERT_EQ(outputs.size(), plan.model_outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_EQ(outputs[i].name, plan.model_outputs[i].name);
      handed_back[frame].push_back(sha256_hex(outputs[i].data));
    }
  };
  const RunResult result = run_on_cluster(plan, dir, cluster(), options);
  ASSERT_TRUE(result.complete) << result.error;
  EXPECT_EQ(result.frames_completed, 5);
  EXPECT_EQ(result.frames_skipped, 2);
  EXPECT_EQ(skipped, (std::vector<std::uint64_t>{2, 5}));
  EXPECT_NE(skip_message.find("frame2.npy: unreadable"), std::string::npos) << skip_message;
  EXPECT_NE(skip_message.find("the plan takes"), std::string::npos) << skip_message;
  ASSERT_EQ(handed_back.size(), 5u);
  for (const auto& [frame, hashes] : handed_back)
    EXPECT_EQ(hashes, reference_hashes(model, 100 + frame)) << "frame " << frame;
  EXPECT_EQ(result.delivery_order, (std::vector<std::int64_t>{0, 1, 3, 4, 6}));
}

// A hybrid (2 replicas of a 2-node model-parallel plan) on four workers. Frame k runs entirely in
// replica k mod 2: every routing destination's replica r lies on replica r's nodes, so each
// node computes its fragments for its replica's frames only, and the outputs are the whole
// model's bits.
TEST_F(ClusterRunTest, HybridPlanKeepsEachFrameInOneReplicaAndMatchesTheWholeModel) {
  const Graph& model = models_->at("cnn");
  SplitOptions options;
  options.nodes = 4;
  options.strategy = "hybrid";
  options.replicas = 2;
  SplitResult split = split_model(model, options);
  const auto dir = *root_ / "cnn-hybrid-2x2";
  const Plan plan = write_split(split, dir);
  ASSERT_EQ(plan.strategy, "hybrid");
  ASSERT_EQ(plan.replicas, 2);
  ASSERT_TRUE(plan.inner_strategy == "experts" || plan.inner_strategy == "pipeline");
  ASSERT_GE(plan.fragments.size(), 2u) << plan.structure;
  auto replica_of = [](const std::string& node) { return (node.back() - '0') / 2; };

  const std::vector<std::string> names = {"w0", "w1", "w2", "w3"};
  const JobLayout layout = make_job_layout(plan, dir, names);
  for (const auto& route : layout.inputs)
    for (std::size_t r = 0; r < route.destination.replicas.size(); ++r)
      EXPECT_EQ(replica_of(route.destination.replicas[r].node), static_cast<int>(r));
  for (const auto& [node, assignments] : layout.assignments)
    for (const auto& assignment : assignments)
      for (const auto& destinations : assignment.outputs)
        for (const auto& d : destinations) {
          if (d.replicas.size() == 1 && d.replicas.front().node.empty()) continue;  // model
          ASSERT_EQ(d.replicas.size(), 2u) << assignment.name;
          for (std::size_t r = 0; r < 2; ++r)
            EXPECT_EQ(replica_of(d.replicas[r].node), static_cast<int>(r)) << assignment.name;
        }

  constexpr std::int64_t kFrames = 5;  // replica 0 runs frames 0, 2, 4; replica 1 frames 1, 3
  const RunResult result = run_on_four_workers(model, plan, dir, "cache-hybrid", kFrames);
  ASSERT_TRUE(result.complete) << result.error;
  ASSERT_EQ(result.nodes.size(), 4u);
  for (const NodeResult& node : result.nodes) {
    const std::uint64_t frames = replica_of(node.name) == 0 ? 3 : 2;
    EXPECT_EQ(node.frames_computed, frames * node.fragments.size()) << node.name;
  }
}

// Experts whose branches are pipelined, on four workers: a branch's stages hand their
// tensors over directly, node to node, and the outputs are the whole model's bits.
TEST_F(ClusterRunTest, PipelinedExpertsRunNodeToNodeAndMatchTheWholeModel) {
  const Graph& model = models_->at("cnn");
  SplitOptions options;
  options.nodes = 4;
  options.strategy = "hybrid";
  options.replicas = 1;
  const auto dir = *root_ / "cnn-pipelined-experts";
  SplitResult split = split_model(model, options);
  const Plan plan = write_split(split, dir);
  ASSERT_EQ(plan.inner_strategy, "pipelined-experts") << plan.structure;
  bool stage_to_stage = false;  // some branch stage feeds the next stage of its branch
  for (const auto& e : plan.edges)
    stage_to_stage = stage_to_stage || (e.from.find("_stage0") != std::string::npos &&
                                        e.to.find("_stage1") != std::string::npos);
  EXPECT_TRUE(stage_to_stage) << plan.structure;

  constexpr std::int64_t kFrames = 4;
  const RunResult result = run_on_four_workers(model, plan, dir, "cache-pipelined", kFrames);
  ASSERT_TRUE(result.complete) << result.error;
  ASSERT_EQ(result.nodes.size(), 4u);
  for (const NodeResult& node : result.nodes)
    EXPECT_EQ(node.frames_computed, kFrames * node.fragments.size()) << node.name;
}

// Frame shares (replicate on boards of unequal speed): the orchestrator sends each copy its
// share of the frames, in replica_cycle's order, and the outputs stay the whole model's.
TEST_F(ClusterRunTest, ReplicateFollowsTheFrameShares) {
  const Graph& model = models_->at("cnn");
  SplitOptions options;
  options.nodes = 3;
  options.strategy = "replicate";
  SplitResult split = split_model(model, options);
  const auto dir = *root_ / "cnn-frame-share";
  Plan plan = write_split(split, dir);
  plan.frame_share = {1, 2, 3};
  constexpr std::int64_t kFrames = 12;  // two cycles of 6 frames: 2, 4 and 6 frames
  const RunResult result = run_on_cluster(plan, dir, cluster(), quick(kFrames, 3));
  ASSERT_TRUE(result.complete) << result.error;
  for (std::uint64_t frame = 0; frame < kFrames; ++frame)
    EXPECT_EQ(result.frame_output_sha256[frame], reference_hashes(model, frame % 4))
        << "frame " << frame;
  std::map<std::string, std::uint64_t> computed;
  for (const NodeResult& node : result.nodes) computed[node.name] = node.frames_computed;
  EXPECT_EQ(computed, (std::map<std::string, std::uint64_t>{{"w0", 2}, {"w1", 4}, {"w2", 6}}));
}

// The same plans on workers running the cpu backend (when this build has it): still
// bit-identical to the whole model on ref.
TEST_F(ClusterRunTest, CpuWorkersMatchTheWholeModelOnRef) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), "cpu") == names.end())
    GTEST_SKIP() << "this build has no cpu backend";
  std::vector<std::unique_ptr<WorkerThread>> cpu_workers;
  ClusterConfig config = cluster();
  for (std::size_t i = 0; i < 3; ++i) {
    net::WorkerOptions options = test_worker_options(*root_ / ("cpu-cache" + std::to_string(i)));
    options.backend = "cpu";
    cpu_workers.push_back(std::make_unique<WorkerThread>(options));
    config.nodes[i].address = "127.0.0.1:" + std::to_string(cpu_workers.back()->port());
    config.nodes[i].backend = "cpu";
  }
  for (const Case& c : {Case{"cnn", "experts", 3}, Case{"convvit", "pipeline", 2}}) {
    const auto& [family, strategy, nodes] = c;
    const auto [plan, dir] = plan_for(family, strategy, nodes);
    const RunResult result = run_on_cluster(plan, dir, config, quick());
    ASSERT_TRUE(result.complete) << result.error;
    for (std::uint64_t frame = 0; frame < 6; ++frame)
      EXPECT_EQ(result.frame_output_sha256[frame], reference_hashes(models_->at(family), frame % 4))
          << family << " frame " << frame;
  }
}

TEST_F(ClusterRunTest, FragmentsAreUploadedOnlyOnce) {
  // A model of its own: the workers serve every test of this binary, and another test's
  // plan may share fragments with the shared models' plans.
  SplitOptions options;
  options.nodes = 3;
  options.strategy = "experts";
  SplitResult split = split_model(small_model("cnn", 4242), options);
  const auto dir = *root_ / "cnn-upload-once";
  const Plan plan = write_split(split, dir);
  std::uint64_t received_before = 0;
  for (const auto& w : *workers_) received_before += w->worker().counters().upload_bytes_received;
  const RunResult first = run_on_cluster(plan, dir, cluster(), quick(2, 1));
  ASSERT_TRUE(first.complete) << first.error;
  EXPECT_GT(first.upload_bytes, 0u);
  EXPECT_EQ(first.fragments_cached, 0u);
  std::uint64_t received_after = 0;
  for (const auto& w : *workers_) received_after += w->worker().counters().upload_bytes_received;
  EXPECT_EQ(received_after - received_before, first.upload_bytes);

  const RunResult second = run_on_cluster(plan, dir, cluster(), quick(2, 1));
  ASSERT_TRUE(second.complete) << second.error;
  EXPECT_EQ(second.upload_bytes, 0u);
  EXPECT_EQ(second.fragments_uploaded, 0u);
  EXPECT_EQ(second.fragments_cached, first.fragments_uploaded);
  std::uint64_t received_last = 0;
  for (const auto& w : *workers_) received_last += w->worker().counters().upload_bytes_received;
  EXPECT_EQ(received_last, received_after);
  EXPECT_EQ(second.output_sha256, first.output_sha256);
}

// A folder or a FIFO in place of a fragment file: one error naming it, no hang.
TEST_F(ClusterRunTest, FolderOrFifoAsAFragmentIsNamed) {
  for (const std::string kind : {"folder", "fifo"}) {
    const auto [plan, dir] = plan_for("cnn", "pipeline", 2);
    const std::filesystem::path file = dir / plan.fragments[0].file;
    std::filesystem::remove(file);
    if (kind == "folder")
      std::filesystem::create_directory(file);
    else
      ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
    std::string error;
    try {
      error = run_on_cluster(plan, dir, cluster(), quick()).error;
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find(file.string()), std::string::npos) << error;
    EXPECT_NE(error.find(kind == "folder" ? "is a directory" : "is a FIFO"), std::string::npos)
        << error;
  }
}

// A --no-output-fix plan: fragments end at a float, shipped in their wire form (the
// NAME__wire fix appended, wire_fragment), so int8 crosses and the outputs are the whole
// model's, as with `run --local`.
TEST_F(ClusterRunTest, NoOutputFixPlanIsBitIdentical) {
  const auto [plan, dir] = plan_for("cnn", "pipeline", 3, false);
  bool unfixed = false;
  for (const PlanFragment& f : plan.fragments)
    for (const PlanTensor& t : f.outputs) unfixed = unfixed || !t.fixed;
  ASSERT_TRUE(unfixed) << "the plan has no unfixed output to wire";
  const RunResult result = run_on_cluster(plan, dir, cluster(), quick());
  ASSERT_TRUE(result.complete) << result.error;
  const Graph& model = models_->at("cnn");
  for (std::uint64_t frame = 0; frame < 6; ++frame)
    EXPECT_EQ(result.frame_output_sha256[frame], reference_hashes(model, frame % 4))
        << "frame " << frame;
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(model))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 0));
  std::vector<std::string> local;
  for (const QTensor& output : run_plan_locally(plan, dir, inputs))
    local.push_back(sha256_hex(output.data));
  EXPECT_EQ(local, reference_hashes(model, 0));
}

// A fragment file replaced by garbage with its hash recorded in the plan: the hash check
// passes, the model check does not, and nothing is uploaded.
TEST_F(ClusterRunTest, FragmentThatIsNoModelIsRefusedBeforeUpload) {
  auto [plan, dir] = plan_for("cnn", "pipeline", 2);
  const std::filesystem::path file = dir / plan.fragments[1].file;
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << "not a model, but the plan will record its sha256";
  }
  plan.fragments[1].sha256 = sha256_file(file);
  std::uint64_t received_before = 0;
  for (const auto& w : *workers_) received_before += w->worker().counters().upload_bytes_received;
  std::string error;
  try {
    error = run_on_cluster(plan, dir, cluster(), quick()).error;
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("plan fragment '" + plan.fragments[1].name + "'"), std::string::npos)
      << error;
  EXPECT_NE(error.find(file.string() + ": not an xmodel"), std::string::npos) << error;
  std::uint64_t received_after = 0;
  for (const auto& w : *workers_) received_after += w->worker().counters().upload_bytes_received;
  EXPECT_EQ(received_after, received_before);
}

TEST_F(ClusterRunTest, PacedLinkReachesTheWorkersThroughLoad) {
  // Unshaped first (ref workers and link_emulation auto: off), to learn how much the
  // busiest worker sends; then a link slow enough that its port alone needs 0.4 s.
  const auto [plan, dir] = plan_for("cnn", "pipeline", 2);
  const RunResult unshaped = run_on_cluster(plan, dir, cluster(), quick(4, 2));
  ASSERT_TRUE(unshaped.complete) << unshaped.error;
  EXPECT_EQ(unshaped.link_emulation, "off");
  std::uint64_t busiest = 0;
  for (const auto& node : unshaped.nodes) busiest = std::max(busiest, node.tensor_bytes_sent);
  ASSERT_GT(busiest, 0u);
  ClusterConfig paced = cluster();
  paced.link_emulation = LinkEmulation::Paced;
  paced.link_gbps = static_cast<double>(busiest) * 8 / 0.4 / 1e9;
  const RunResult result = run_on_cluster(plan, dir, paced, quick(4, 2));
  ASSERT_TRUE(result.complete) << result.error;
  EXPECT_EQ(result.link_emulation, "paced");
  EXPECT_EQ(result.output_sha256, unshaped.output_sha256);
  // The busiest worker's egress is paced only if its LOAD told it the link.
  EXPECT_GE(result.wall_s, 0.36) << "unshaped: " << unshaped.wall_s << " s";
  for (const auto& node : result.nodes) EXPECT_GE(node.cpu_ms, 0.0);
  EXPECT_GT(result.orchestrator_cpu_ms_per_frame, 0.0);
}

TEST_F(ClusterRunTest, ServerSendsEachFrameAtItsPoissonArrival) {
  // MLPerf LoadGen's Server scenario: 8 frames arriving at 20 fps on average, whatever is in
  // flight. The stream lasts at least until the last arrival (a closed loop would send the
  // next frame when one completes, with no regard for the schedule), every frame's output
  // is still the whole model's, and latency counts from arrival.
  const auto [plan, dir] = plan_for("cnn", "experts", 2);
  RunOptions options = quick(8, 1);
  options.arrival_fps = 20;
  const RunResult result = run_on_cluster(plan, dir, cluster(), options);
  ASSERT_TRUE(result.complete) << result.error;
  EXPECT_EQ(result.frames_completed, 8);
  const auto arrivals = poisson_arrivals(20, 8, options.seed);
  const double last = std::chrono::duration<double>(arrivals.back()).count();
  EXPECT_GE(result.wall_s, last);
  const Graph& model = models_->at("cnn");
  for (std::uint64_t frame = 0; frame < 8; ++frame)
    EXPECT_EQ(result.frame_output_sha256[frame], reference_hashes(model, frame % 4));
  EXPECT_GT(result.latency_min_ms, 0.0);
}

TEST_F(ClusterRunTest, WrongTokenIsRefusedNamingTheNode) {
  const auto [plan, dir] = plan_for("cnn", "experts", 1);
  const RunResult result = run_on_cluster(plan, dir, cluster("wrong"), quick());
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.failed_node, "w0");
  EXPECT_NE(result.error.find("auth_failed"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("node 'w0'"), std::string::npos) << result.error;
}

TEST_F(ClusterRunTest, BackendOtherThanClusterYamlSaysIsRefused) {
  const auto [plan, dir] = plan_for("cnn", "experts", 1);
  ClusterConfig config = cluster();
  config.nodes[0].backend = "cpu";
  const RunResult result = run_on_cluster(plan, dir, config, quick());
  EXPECT_FALSE(result.complete);
  EXPECT_NE(result.error.find("runs backend 'ref', test-cluster.yaml:2 says 'cpu'"),
            std::string::npos)
      << result.error;
}

TEST_F(ClusterRunTest, UnreachableNodeIsNamed) {
  const auto [plan, dir] = plan_for("cnn", "pipeline", 2);
  ClusterConfig config = cluster();
  // A port that was just free: nobody listens there.
  net::asio::io_context io;
  net::tcp::acceptor probe(io, net::tcp::endpoint(net::asio::ip::make_address("127.0.0.1"), 0));
  config.nodes[1].address = "127.0.0.1:" + std::to_string(probe.local_endpoint().port());
  probe.close();
  const RunResult result = run_on_cluster(plan, dir, config, quick());
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.failed_node, "w1");
  EXPECT_NE(result.error.find("cannot connect"), std::string::npos) << result.error;
}

TEST_F(ClusterRunTest, PlanNeedingMoreNodesThanTheClusterIsAnError) {
  const auto [plan, dir] = plan_for("cnn", "pipeline", 3);
  ClusterConfig config = cluster();
  config.nodes.pop_back();
  EXPECT_THROW(run_on_cluster(plan, dir, config, quick()), Error);
}

TEST_F(ClusterRunTest, NodeStoppingMidRunEndsItNamingNodeAndFrame) {
  WorkerThread doomed(test_worker_options(*root_ / "doomed"));
  const auto [plan, dir] = plan_for("cnn", "pipeline", 2);
  ClusterConfig config = cluster();
  config.nodes[1].address = "127.0.0.1:" + std::to_string(doomed.port());
  std::thread stopper([&] {
    // Stop it once it has computed some frames: mid-run.
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (doomed.worker().counters().frames_computed < 3 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    doomed.worker().stop();
  });
  const auto start = std::chrono::steady_clock::now();
  RunOptions endless = quick(1000000, 2);
  endless.hash_every_frame = false;
  const RunResult result = run_on_cluster(plan, dir, config, endless);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.failed_node, "w1");
  EXPECT_GE(result.failed_frame, 0);
  EXPECT_NE(result.error.find("node 'w1'"), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("frame"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace dpushard::cluster
