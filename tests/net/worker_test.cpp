// The worker over real loopback sockets: authentication, the content-addressed cache,
// jobs with one and two workers, bounded queues and the failures it reports.

#include <gtest/gtest.h>

#include "dpushard/base/sha256.hpp"
#include "test_client.hpp"

namespace dpushard::net::testing {
namespace {

constexpr std::uint64_t kJob = 0xC0FFEE;

Load single_fragment_load(const Digest& sha, std::uint32_t inflight = 4) {
  Load load;
  load.job = kJob;
  load.node = "n0";
  load.inflight = inflight;
  load.fragments = {FragmentAssignment{0, sha, "a", {{Destination{{Target{}}, 0}}}}};
  return load;
}

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { cache_ = fresh_dir("worker"); }
  void TearDown() override { std::filesystem::remove_all(cache_); }
  std::filesystem::path cache_;
};

TEST_F(WorkerTest, AuthenticatesAndNamesItsBackend) {
  WorkerThread w(test_worker_options(cache_));
  TestClient client(w.port());
  EXPECT_EQ(client.handshake("secret"), "ref");
}

TEST_F(WorkerTest, CachesFragmentsByHashAcrossRestarts) {
  const std::string bytes = serialize_xmodel(tiny_conv("a", 3, 4, 8, 3, 1));
  const Digest sha = sha_of(bytes);
  {
    WorkerThread w(test_worker_options(cache_));
    TestClient client(w.port());
    client.handshake("secret");
    client.send(HaveQuery{{sha}});
    EXPECT_EQ(std::get<HaveReply>(client.expect()).have, std::vector<std::uint8_t>{0});
    upload(client, bytes, 700);
    client.send(HaveQuery{{sha}});
    EXPECT_EQ(std::get<HaveReply>(client.expect()).have, std::vector<std::uint8_t>{1});
    EXPECT_EQ(w.worker().counters().upload_bytes_received, bytes.size());
    EXPECT_EQ(w.worker().counters().fragments_stored, 1u);
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(cache_ / (to_hex(sha) + ".xmodel")));
  WorkerThread again(test_worker_options(cache_));
  TestClient client(again.port());
  client.handshake("secret");
  client.send(HaveQuery{{sha, Digest{}}});
  EXPECT_EQ(std::get<HaveReply>(client.expect()).have, (std::vector<std::uint8_t>{1, 0}));
  EXPECT_EQ(again.worker().counters().upload_bytes_received, 0u);
}

TEST_F(WorkerTest, RejectsAnUploadWhoseBytesDoNotMatchItsHash) {
  WorkerThread w(test_worker_options(cache_));
  TestClient client(w.port());
  client.handshake("secret");
  const std::string bytes = "not the fragment that was announced";
  client.send(UploadChunk{sha_of("something else"), bytes.size(), 0,
                          std::vector<std::int8_t>(bytes.begin(), bytes.end())});
  EXPECT_EQ(client.expect_dropped().code, ErrorCode::kBadFragment);
  for (const auto& entry : std::filesystem::directory_iterator(cache_))
    ADD_FAILURE() << "left in the cache: " << entry.path();
}

// Bytes whose hash matches but which are no model: LOAD refuses them and the cache does
// not keep them (a later HAVE says no, so a good upload can replace them).
TEST_F(WorkerTest, NeverKeepsAFragmentItRefusedToLoad) {
  const std::string garbage = "these bytes have the right hash but are not an xmodel";
  WorkerThread w(test_worker_options(cache_));
  TestClient client(w.port());
  client.handshake("secret");
  upload(client, garbage);
  client.send(single_fragment_load(sha_of(garbage)));
  const auto refused = std::get<FrameError>(client.expect());
  EXPECT_EQ(refused.code, ErrorCode::kBadFragment);
  EXPECT_NE(refused.message.find("not an xmodel"), std::string::npos) << refused.message;
  client.send(HaveQuery{{sha_of(garbage)}});
  EXPECT_EQ(std::get<HaveReply>(client.expect()).have, std::vector<std::uint8_t>{0});
  EXPECT_FALSE(std::filesystem::exists(cache_ / (to_hex(sha_of(garbage)) + ".xmodel")));
}

TEST_F(WorkerTest, RunsFramesOfOneFragmentBitExactly) {
  const Graph graph = tiny_conv("a", 3, 4, 8, 3, 1);
  const std::string bytes = serialize_xmodel(graph);
  WorkerThread w(test_worker_options(cache_));
  TestClient client(w.port());
  client.handshake("secret");
  upload(client, bytes);
  client.send(single_fragment_load(sha_of(bytes)));
  EXPECT_EQ(std::get<Loaded>(client.expect()).job, kJob);

  auto reference = make_backend("ref");
  reference->load(graph);
  const QTensor spec = input_specs(graph)[0];
  std::map<std::uint64_t, QTensor> expected;
  for (std::uint64_t frame = 0; frame < 4; ++frame) {
    QTensor input = random_qtensor(spec.name, spec.shape, spec.fix_point, 100 + frame);
    expected[frame] = reference->run({input})[0];
    client.send(TensorMsg{kJob, frame, 0, 0, input});
  }
  for (int i = 0; i < 4; ++i) {
    const auto output = std::get<TensorMsg>(client.expect());
    EXPECT_EQ(output.slot, kOrchestratorSlot);
    EXPECT_EQ(output.index, 0u);
    EXPECT_EQ(output.tensor.data, expected.at(output.frame).data);
    EXPECT_EQ(output.tensor.shape, expected.at(output.frame).shape);
  }
  client.send(StatsRequest{kJob});
  const Stats stats = std::get<Stats>(client.expect());
  ASSERT_EQ(stats.fragments.size(), 1u);
  EXPECT_EQ(stats.fragments[0].frames, 4u);
  EXPECT_GT(stats.fragments[0].busy_ns, 0u);
  EXPECT_GT(stats.tensor_bytes_sent, 4u * 6 * 6 * 8);
}

TEST_F(WorkerTest, SendsTensorsStraightToTheConsumingWorker) {
  const Graph a = tiny_conv("a", 3, 4, 8, 3, 1);
  const Graph b = tiny_conv("b", 8, 3, 4, 2, 2);
  const std::string a_bytes = serialize_xmodel(a), b_bytes = serialize_xmodel(b);
  WorkerThread w0(test_worker_options(cache_ / "0"));
  WorkerThread w1(test_worker_options(cache_ / "1"));
  const std::vector<PeerAddress> peers = {{"n0", "127.0.0.1:" + std::to_string(w0.port())},
                                          {"n1", "127.0.0.1:" + std::to_string(w1.port())}};
  TestClient c0(w0.port()), c1(w1.port());
  c0.handshake("secret");
  c1.handshake("secret");
  upload(c0, a_bytes);
  upload(c1, b_bytes);
  Load l0{kJob,
          "n0",
          2,
          peers,
          {FragmentAssignment{0, sha_of(a_bytes), "a", {{Destination{{Target{"n1", 1}}, 0}}}}}};
  Load l1{kJob,
          "n1",
          2,
          peers,
          {FragmentAssignment{1, sha_of(b_bytes), "b", {{Destination{{Target{}}, 0}}}}}};
  c1.send(l1);
  c0.send(l0);
  EXPECT_EQ(std::get<Loaded>(c1.expect()).job, kJob);
  EXPECT_EQ(std::get<Loaded>(c0.expect()).job, kJob);

  auto ra = make_backend("ref"), rb = make_backend("ref");
  ra->load(a);
  rb->load(b);
  const QTensor spec = input_specs(a)[0];
  for (std::uint64_t frame = 0; frame < 3; ++frame) {
    QTensor input = random_qtensor(spec.name, spec.shape, spec.fix_point, frame);
    const QTensor expected = rb->run(ra->run({input}))[0];
    c0.send(TensorMsg{kJob, frame, 0, 0, input});
    const auto output = std::get<TensorMsg>(c1.expect());
    EXPECT_EQ(output.frame, frame);
    EXPECT_EQ(output.tensor.data, expected.data);
  }
  c0.send(StatsRequest{kJob});
  const Stats s0 = std::get<Stats>(c0.expect());  // nothing but the stats came back to c0
  EXPECT_GE(s0.tensor_bytes_sent, 3u * 6 * 6 * 8);
}

// An experts plan hands a tensor from one fragment to the next inside the worker, once a
// frame. Those buffers come from the backend, not the pool: the pool must not keep them
// (it once grew to its 512 MB cap this way), and an idle worker keeps no buffers at all.
TEST_F(WorkerTest, KeepsMemoryFlatWhenFragmentsHandTensorsToEachOther) {
  const std::string a_bytes = serialize_xmodel(tiny_conv("a", 3, 4, 8, 3, 1));
  const std::string b_bytes = serialize_xmodel(tiny_conv("b", 8, 3, 4, 2, 2));
  WorkerThread w(test_worker_options(cache_));
  TestClient client(w.port());
  client.handshake("secret");
  upload(client, a_bytes);
  upload(client, b_bytes);
  constexpr std::uint32_t kInflight = 4;
  client.send(
      Load{kJob,
           "n0",
           kInflight,
           {},
           {FragmentAssignment{0, sha_of(a_bytes), "a", {{Destination{{Target{"n0", 1}}, 0}}}},
            FragmentAssignment{1, sha_of(b_bytes), "b", {{Destination{{Target{}}, 0}}}}}});
  EXPECT_EQ(std::get<Loaded>(client.expect()).job, kJob);
  constexpr std::uint64_t kFrames = 300;
  std::uint64_t sent = 0;
  for (; sent < kInflight; ++sent)
    client.send(TensorMsg{kJob, sent, 0, 0, random_qtensor("x", {1, 6, 6, 3}, 4, sent)});
  for (std::uint64_t received = 0; received < kFrames; ++received) {
    EXPECT_EQ(std::get<TensorMsg>(client.expect()).slot, kOrchestratorSlot);
    if (sent < kFrames) {
      client.send(TensorMsg{kJob, sent, 0, 0, random_qtensor("x", {1, 6, 6, 3}, 4, sent)});
      ++sent;
    }
  }
  // At most a few frames' buffers of each size, not one per frame (300 x 288 bytes).
  const std::uint64_t per_frame = 6 * 6 * 3 + 6 * 6 * 8;
  EXPECT_LE(w.worker().counters().pooled_buffer_bytes, 4 * kInflight * per_frame);

  client.send(Unload{kJob});
  client.send(StatsRequest{kJob});  // answered after the UNLOAD was handled
  EXPECT_EQ(std::get<FrameError>(client.expect()).code, ErrorCode::kNoSuchJob);
  EXPECT_EQ(w.worker().counters().pooled_buffer_bytes, 0u);
}

// A plan switch (docs/cluster.md "Losing a node"): UNLOAD, then LOAD of a job that runs the
// same fragment on the same connection. The fragment is taken loaded from the job before,
// so it loads even with its file gone from the cache, and computes as before; a new
// connection finds nothing kept (the fragments went when the first one closed).
TEST_F(WorkerTest, AJobLoadedAfterAnUnloadReusesTheFragmentsOfTheJobBefore) {
  const std::string bytes = serialize_xmodel(tiny_conv("a", 3, 4, 8, 3, 1));
  WorkerThread w(test_worker_options(cache_));
  const QTensor input = random_qtensor("x", {1, 6, 6, 3}, 4, 5);
  std::vector<std::int8_t> first_output;
  {
    TestClient client(w.port());
    client.handshake("secret");
    upload(client, bytes);
    client.send(single_fragment_load(sha_of(bytes)));
    EXPECT_EQ(std::get<Loaded>(client.expect()).job, kJob);
    client.send(TensorMsg{kJob, 0, 0, 0, input});
    first_output = std::get<TensorMsg>(client.expect()).tensor.data;
    client.send(Unload{kJob});
    std::filesystem::remove(cache_ / (to_hex(sha_of(bytes)) + ".xmodel"));
    Load next = single_fragment_load(sha_of(bytes));
    next.job = kJob + 1;
    client.send(next);
    EXPECT_EQ(std::get<Loaded>(client.expect()).job, kJob + 1);
    client.send(TensorMsg{kJob + 1, 1, 0, 0, input});
    const auto output = std::get<TensorMsg>(client.expect());
    EXPECT_EQ(output.job, kJob + 1);
    EXPECT_EQ(output.tensor.data, first_output);
    client.send(Unload{kJob + 1});
  }
  TestClient again(w.port());
  again.handshake("secret");
  again.send(single_fragment_load(sha_of(bytes)));
  EXPECT_EQ(std::get<FrameError>(again.expect()).code, ErrorCode::kBadFragment);
}

TEST_F(WorkerTest, ReportsALostPeerByName) {
  const std::string a_bytes = serialize_xmodel(tiny_conv("a", 3, 4, 8, 3, 1));
  WorkerThread w0(test_worker_options(cache_ / "0"));
  auto w1 = std::make_unique<WorkerThread>(test_worker_options(cache_ / "1"));
  const std::vector<PeerAddress> peers = {{"n1", "127.0.0.1:" + std::to_string(w1->port())}};
  TestClient c0(w0.port());
  c0.handshake("secret");
  upload(c0, a_bytes);
  c0.send(
      Load{kJob,
           "n0",
           2,
           peers,
           {FragmentAssignment{0, sha_of(a_bytes), "a", {{Destination{{Target{"n1", 1}}, 0}}}}}});
  EXPECT_EQ(std::get<Loaded>(c0.expect()).job, kJob);
  const auto start = std::chrono::steady_clock::now();
  w1.reset();
  const auto error = std::get<FrameError>(c0.expect());
  EXPECT_EQ(error.code, ErrorCode::kPeerLost);
  EXPECT_EQ(error.node, "n1");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
}

TEST_F(WorkerTest, RefusesMoreFramesInFlightThanItsQueueHolds) {
  const std::string bytes = serialize_xmodel(tiny_conv("a", 3, 4, 8, 3, 1));
  WorkerOptions options = test_worker_options(cache_);
  options.queue_capacity = 2;
  WorkerThread w(options);
  TestClient client(w.port());
  client.handshake("secret");
  upload(client, bytes);
  client.send(single_fragment_load(sha_of(bytes), 3));
  const auto error = std::get<FrameError>(client.expect());
  EXPECT_EQ(error.code, ErrorCode::kQueueFull);
}

TEST_F(WorkerTest, ReportsWrongTensorsAndMissingFragments) {
  const std::string bytes = serialize_xmodel(tiny_conv("a", 3, 4, 8, 3, 1));
  WorkerThread w(test_worker_options(cache_));
  TestClient client(w.port());
  client.handshake("secret");
  client.send(single_fragment_load(sha_of(bytes)));
  const auto missing = std::get<FrameError>(client.expect());
  EXPECT_EQ(missing.code, ErrorCode::kBadFragment);
  EXPECT_NE(missing.message.find(to_hex(sha_of(bytes))), std::string::npos);

  upload(client, bytes);
  client.send(single_fragment_load(sha_of(bytes)));
  EXPECT_EQ(std::get<Loaded>(client.expect()).job, kJob);
  client.send(TensorMsg{kJob, 7, 0, 0, random_qtensor("x", {1, 5, 5, 3}, 4, 1)});
  const auto wrong = std::get<FrameError>(client.expect());
  EXPECT_EQ(wrong.code, ErrorCode::kMalformed);
  EXPECT_EQ(wrong.frame, 7u);
  EXPECT_NE(wrong.message.find("fragment 'a'"), std::string::npos);
  client.send(TensorMsg{kJob, 8, 5, 0, random_qtensor("x", {1, 6, 6, 3}, 4, 1)});
  EXPECT_EQ(std::get<FrameError>(client.expect()).code, ErrorCode::kMalformed);
  client.send(TensorMsg{kJob + 1, 9, 0, 0, random_qtensor("x", {1, 6, 6, 3}, 4, 1)});
  EXPECT_EQ(std::get<FrameError>(client.expect()).code, ErrorCode::kNoSuchJob);
}

TEST_F(WorkerTest, StopsOnShutdownAndTellsItsClients) {
  Worker worker(test_worker_options(cache_));
  std::thread thread([&] { worker.run(); });
  TestClient watcher(worker.port());
  watcher.handshake("secret");
  TestClient client(worker.port());
  client.handshake("secret");
  client.send(Shutdown{});
  thread.join();  // run() returns
  EXPECT_EQ(watcher.expect_dropped().code, ErrorCode::kShuttingDown);
}

}  // namespace
}  // namespace dpushard::net::testing
