// The worker knows its DPU: a `vart` worker (on the VART double) reports the DPU's
// fingerprint and batch in its handshake, and the orchestrator runs a plan's compiled
// fragment on it only when the fragment was compiled for that DPU. A mismatch ends the run
// before any upload or frame with one line naming the node and both fingerprints.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "compile_equivalent.hpp"
#include "double/vart_double.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/vart_backend.hpp"
#include "dpushard/net/client.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "net/test_client.hpp"

namespace dpushard::cluster {
namespace {

using net::testing::fresh_dir;
using net::testing::test_worker_options;
using net::testing::TestClient;
using net::testing::WorkerThread;
using ::testing::HasSubstr;

constexpr std::uint64_t kKv260 = 0x101000016010407;  // DPUCZDX8G_ISA1_B4096 (docs/vart.md)
constexpr std::uint64_t kOther = 0x1000020f6014407;  // any other DPU

Graph small_cnn() {
  ZooSpec spec;
  spec.params = 120'000;
  spec.input = {16, 16, 3};
  spec.classes = 10;
  spec.seed = 11;
  return make_cnn(spec);
}

std::vector<std::string> reference_hashes(const Graph& model) {
  auto backend = make_backend("ref");
  backend->load(model);
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(model))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 0));
  std::vector<std::string> hashes;
  for (const QTensor& output : backend->run(inputs)) hashes.push_back(sha256_hex(output.data));
  return hashes;
}

class VartCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    register_vart_backend();
    dir_ = fresh_dir("vart-cluster");
    model_ = small_cnn();
    SplitOptions options;
    options.nodes = 2;
    options.strategy = "pipeline";
    SplitResult split = split_model(model_, options);
    plan_ = write_split(split, dir_ / "plan");
    ASSERT_EQ(plan_.fragments.size(), 2u);
    ASSERT_EQ(plan_.fragments[0].nodes, std::vector<int>{0});
    // The first fragment "compiled" (compile_equivalent) for `compiled_for`; the double
    // computes it from its `_int` file.
    int_graph_ = read_xmodel(dir_ / "plan" / plan_.fragments[0].file);
  }
  void TearDown() override {
    workers_.clear();
    vart_double::clear_settings();
    std::filesystem::remove_all(dir_);
  }

  void record_compiled(std::uint64_t compiled_for) {
    Graph compiled = vart_test::compile_equivalent(int_graph_);
    for (Subgraph& child : compiled.root()->children)
      if (child.device() == "DPU") child.attrs["dpu_fingerprint"] = compiled_for;
    const std::string bytes = serialize_xmodel(compiled);
    const std::string file = "fragments/" + plan_.fragments[0].name + ".xmodel";
    std::ofstream(dir_ / "plan" / file, std::ios::binary) << bytes;
    const std::string sha = to_hex(
        sha256(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size())));
    plan_.fragments[0].compiled = PlanCompiled{file, sha, compiled_for};
    write_plan(plan_, dir_ / "plan");
    plan_ = read_plan(dir_ / "plan");
  }

  // Worker 0 on vart (the double's DPU is `dpu`), worker 1 on ref.
  ClusterConfig start_workers(std::uint64_t dpu, std::optional<DeviceInfo> reported = {},
                              int runner_batch = 1) {
    vart_double::Settings settings;
    settings.int_graph = int_graph_;
    settings.fingerprint = dpu;
    settings.batch = runner_batch;
    vart_double::set_settings(settings);
    net::WorkerOptions board = test_worker_options(dir_ / "cache0");
    board.backend = "vart";
    board.device = reported;  // empty: the worker probes (the double's settings)
    workers_.push_back(std::make_unique<WorkerThread>(board));
    workers_.push_back(std::make_unique<WorkerThread>(test_worker_options(dir_ / "cache1")));
    ClusterConfig config;
    config.source = "test-cluster.yaml";
    config.token = "secret";
    config.nodes = {
        {"board0", "127.0.0.1:" + std::to_string(workers_[0]->port()), "vart", "kv260", 2},
        {"host1", "127.0.0.1:" + std::to_string(workers_[1]->port()), "ref", "host", 3}};
    return config;
  }

  static RunOptions quick() {
    RunOptions options;
    options.frames = 3;
    options.inflight = 2;
    options.load_timeout = std::chrono::milliseconds(60000);
    return options;
  }

  std::filesystem::path dir_;
  Graph model_;
  Graph int_graph_;
  Plan plan_;
  std::vector<std::unique_ptr<WorkerThread>> workers_;
};

TEST_F(VartCluster, HandshakeReportsTheDpu) {
  vart_double::Settings settings;
  settings.fingerprint = kOther;
  settings.batch = 4;
  vart_double::set_settings(settings);
  net::WorkerOptions board = test_worker_options(dir_ / "cache0");
  board.backend = "vart";
  WorkerThread vart_worker(board);
  TestClient client(vart_worker.port());
  EXPECT_EQ(client.handshake("secret"), "vart");
  EXPECT_EQ(client.last_auth_ok().dpu_fingerprint, kOther);
  EXPECT_EQ(client.last_auth_ok().dpu_batch, 4u);
  WorkerThread ref_worker(test_worker_options(dir_ / "cache1"));
  TestClient ref_client(ref_worker.port());
  EXPECT_EQ(ref_client.handshake("secret"), "ref");
  EXPECT_EQ(ref_client.last_auth_ok().dpu_fingerprint, 0u);  // no DPU
  EXPECT_EQ(ref_client.last_auth_ok().dpu_batch, 0u);
}

TEST_F(VartCluster, CompiledForThisDpuRuns) {
  record_compiled(kKv260);
  const RunResult result = run_on_cluster(plan_, dir_ / "plan", start_workers(kKv260), quick());
  ASSERT_TRUE(result.complete) << result.error;
  EXPECT_EQ(result.frames_completed, 3);
  EXPECT_EQ(result.output_sha256, reference_hashes(model_));
  ASSERT_EQ(result.nodes.size(), 2u);
  EXPECT_EQ(result.nodes[0].dpu_fingerprint, kKv260);  // as the handshake reported it
  EXPECT_EQ(result.nodes[0].dpu_batch, 1u);
  EXPECT_EQ(result.nodes[0].runner_batch, 1u);     // as the DPU process's runner took it
  EXPECT_EQ(result.nodes[1].dpu_fingerprint, 0u);  // ref: no DPU
  EXPECT_EQ(result.nodes[1].runner_batch, 0u);
}

// The runner's batch comes from the loaded fragment, not from the handshake: a DPU whose
// `xdputil query` names no batch (0) and whose runners take 4 frames a job.
TEST_F(VartCluster, LoadedReportsTheRunnersBatch) {
  record_compiled(kKv260);
  const RunResult result = run_on_cluster(plan_, dir_ / "plan",
                                          start_workers(kKv260, DeviceInfo{kKv260, 0}, 4), quick());
  ASSERT_TRUE(result.complete) << result.error;
  EXPECT_EQ(result.output_sha256, reference_hashes(model_));
  ASSERT_EQ(result.nodes.size(), 2u);
  EXPECT_EQ(result.nodes[0].dpu_batch, 0u);
  EXPECT_EQ(result.nodes[0].runner_batch, 4u);
  EXPECT_EQ(result.nodes[1].runner_batch, 0u);
}

TEST_F(VartCluster, CompiledForAnotherDpuIsRefusedBeforeAnyFrame) {
  record_compiled(kOther);
  const RunResult result = run_on_cluster(plan_, dir_ / "plan", start_workers(kKv260), quick());
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.error, "node 'board0': compiled fragment '" + plan_.fragments[0].name +
                              "' was built for DPU 0x1000020f6014407, the node's DPU is "
                              "0x101000016010407: recompile it with the node's arch.json");
  EXPECT_EQ(result.failed_node, "board0");
  EXPECT_EQ(result.frames_completed, 0);
  EXPECT_EQ(result.upload_bytes, 0u);
}

TEST_F(VartCluster, VartNodeNeedsACompiledFile) {
  const RunResult result = run_on_cluster(plan_, dir_ / "plan", start_workers(kKv260), quick());
  EXPECT_FALSE(result.complete);
  EXPECT_THAT(result.error, HasSubstr("node 'board0' runs backend 'vart': plan fragment '" +
                                      plan_.fragments[0].name + "' has no compiled file"));
}

TEST_F(VartCluster, ADpuBackendWithoutFingerprintSaysSo) {
  record_compiled(kKv260);
  const RunResult result =
      run_on_cluster(plan_, dir_ / "plan", start_workers(kKv260, DeviceInfo{}), quick());
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.error,
            "node 'board0' runs backend 'vart' but reports no DPU fingerprint: "
            "cannot check compiled fragment '" +
                plan_.fragments[0].name + "' (built for DPU 0x101000016010407)");
}

}  // namespace
}  // namespace dpushard::cluster
