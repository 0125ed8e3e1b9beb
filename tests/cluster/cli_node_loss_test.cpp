// `run --cluster --on-node-loss replan` end to end: four `dpushard worker` processes on
// 127.0.0.1 (ephemeral ports), a 4-expert CNN split for four nodes, one worker killed
// (SIGKILL) and another frozen (SIGSTOP) mid-run, or the killed one restarted. Every frame
// must come back once, in frame order, with the outputs `exec` gives for its seed, and the
// run must record each loss and return. The link is paced (cluster.yaml) so the run lasts
// long enough for the faults whatever the machine's speed; nothing here times the recovery
// (bench/node_loss.sh does).

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cli_cluster_fixture.hpp"

namespace dpushard::testing {
namespace {

using namespace std::chrono_literals;

class CliNodeLoss : public CliCluster {
 protected:
  void SetUp() override {
    CliCluster::SetUp();
    model4_ = (dir_ / "model4_int.xmodel").string();
    ASSERT_EQ(run_cli({"zoo", "cnn", "--params", "300K", "--experts", "4", "--input", "32x32x3",
                       "--classes", "10", "--seed", "5", "-o", model4_},
                      "zoo"),
              0)
        << read_text(dir_ / "zoo.err");
    // split records the model's path and sha256: run finds it there to replan.
    ASSERT_EQ(run_cli({"split", model4_, "--nodes", "4", "--strategy", "experts", "-o",
                       (dir_ / "plan4").string()},
                      "split"),
              0)
        << read_text(dir_ / "split.err");
    for (int i = 0; i < 4; ++i) ports_.push_back(start_worker(i));
    // Unpaced, to fill the workers' caches with the 4-node plan before the timed runs.
    write_cluster(ports_, "ref", "warm.yaml");
    ASSERT_EQ(run_cli({"run", plan4(), "--cluster", (dir_ / "warm.yaml").string(), "--frames", "4",
                       "--json"},
                      "warm"),
              0)
        << read_text(dir_ / "warm.err");
    for (int seed = kSeed; seed < kSeed + 4; ++seed) {
      const std::string name = "exec" + std::to_string(seed);
      ASSERT_EQ(run_cli({"exec", model4_, "--seed", std::to_string(seed), "--json"}, name), 0);
      const auto exec = json_of(name);
      std::vector<std::string> hashes;
      for (const auto& output : exec["outputs"]) hashes.push_back(output["sha256"]);
      reference_.push_back(hashes);
    }
  }

  std::string plan4() const { return (dir_ / "plan4").string(); }

  // A cluster.yaml whose link is paced to `gbps`: a frame takes a known least time. Every
  // node runs ref, but node `sim_node` (when given) sim.
  std::string write_paced_cluster(double gbps, int sim_node = -1) {
    const auto path = dir_ / "paced.yaml";
    std::ofstream out(path);
    out << "token_file: token\nlink_gbps: " << gbps << "\nlink_emulation: paced\nnodes:\n";
    for (std::size_t i = 0; i < ports_.size(); ++i)
      out << "  - {name: w" << i << ", address: '127.0.0.1:" << ports_[i]
          << "', backend: " << (static_cast<int>(i) == sim_node ? "sim" : "ref") << "}\n";
    return path.string();
  }

  // Waits until `path` holds `text` (a log line), or `seconds` pass.
  static bool wait_for_text(const std::filesystem::path& path, const std::string& text,
                            std::chrono::seconds seconds) {
    const auto deadline = std::chrono::steady_clock::now() + seconds;
    while (read_text(path).find(text) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  // Every frame delivered once, in frame order, with exec's outputs for its seed.
  void expect_every_frame_once_in_order(const nlohmann::json& run, int frames) const {
    EXPECT_TRUE(run["complete"].get<bool>()) << run.dump(1);
    EXPECT_EQ(run["frames_completed"], frames);
    const auto& delivered = run["frame_outputs"];
    ASSERT_EQ(delivered.size(), static_cast<std::size_t>(frames));
    for (int f = 0; f < frames; ++f) {
      const auto& entry = delivered[static_cast<std::size_t>(f)];
      ASSERT_EQ(entry["frame"], f) << "frame " << f << " delivered out of order or twice";
      EXPECT_EQ(entry["sha256"].get<std::vector<std::string>>(),
                reference_[static_cast<std::size_t>(f % 4)])
          << "frame " << f;
    }
  }

  static constexpr int kSeed = 3;
  std::string model4_;
  std::vector<std::uint16_t> ports_;
  std::vector<std::vector<std::string>> reference_;  // exec's sha256 for seeds kSeed..kSeed+3
};

// The fault test of issue 27: w1 killed, then w2 frozen once the 3-node plan runs; the run
// ends on w0 and w3 with every frame once, in order, byte-identical to exec.
TEST_F(CliNodeLoss, AKilledAndAFrozenWorkerAreReplannedAroundWithoutLosingAFrame) {
  const int frames = 400;
  const std::string cluster = write_paced_cluster(0.01);  // about 290 frames/s at most
  const std::size_t w2_loads = loads(2);
  ChildProcess run({DPUSHARD_CLI, "run", plan4(), "--cluster", cluster, "--frames",
                    std::to_string(frames), "--inflight", "4", "--seed", std::to_string(kSeed),
                    "--peer-timeout", "1", "--on-node-loss", "replan", "--frame-hashes", "--json"},
                   dir_ / "replan.out", dir_ / "replan.err");
  wait_for_load(2, w2_loads);
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before the kill";
  workers_[1]->signal(SIGKILL);
  wait_for_load(2, w2_loads + 1);      // the plan for w0, w2, w3 is loaded
  std::this_thread::sleep_for(300ms);  // and runs frames
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before the freeze";
  workers_[2]->signal(SIGSTOP);
  const auto status = run.wait_for(90s);
  workers_[2]->signal(SIGKILL);  // it never answers again
  ASSERT_TRUE(status) << "the run hangs";
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << read_text(dir_ / "replan.err");

  const auto result = json_of("replan");
  expect_every_frame_once_in_order(result, frames);
  EXPECT_EQ(result["on_node_loss"], "replan");
  const auto& events = result["node_events"];
  ASSERT_EQ(events.size(), 2u) << events.dump(1);
  EXPECT_EQ(events[0]["kind"], "loss");
  EXPECT_EQ(events[0]["node"], "w1");
  EXPECT_EQ(events[0]["nodes_after"], nlohmann::json({"w0", "w2", "w3"}));
  EXPECT_EQ(events[1]["kind"], "loss");
  EXPECT_EQ(events[1]["node"], "w2");
  EXPECT_EQ(events[1]["nodes_after"], nlohmann::json({"w0", "w3"}));
  EXPECT_NE(events[1]["cause"].get<std::string>().find("no message"), std::string::npos)
      << events[1]["cause"];
  EXPECT_LT(events[0]["detected_s"].get<double>(), events[1]["detected_s"].get<double>());
  std::int64_t resent = 0;
  for (const auto& e : events) {
    EXPECT_GE(e["first_frame_s"].get<double>(), 0.0) << e.dump(1);
    EXPECT_GE(e["switch_s"].get<double>(), 0.0);
    EXPECT_LE(e["switch_s"].get<double>(), e["first_frame_s"].get<double>());
    EXPECT_GE(e["frames_resent"].get<std::int64_t>(), 0);
    EXPECT_LE(e["frames_resent"].get<std::int64_t>(), 4);  // at most the frames in flight
    EXPECT_GT(e["predicted_fps_after"].get<double>(), 0.0);
    resent += e["frames_resent"].get<std::int64_t>();
  }
  EXPECT_EQ(result["frames_resent"], resent);
  // The frozen node held frames: they were re-sent.
  EXPECT_GT(events[1]["frames_resent"].get<std::int64_t>(), 0);
  // The 3-node plan's fragments were new to the survivors' caches.
  EXPECT_GT(events[0]["fragments_uploaded"].get<int>(), 0);
  EXPECT_TRUE(result["failed_frames"].empty());
  EXPECT_FALSE(workers_[0]->wait_for(0ms)) << "w0 died";
  EXPECT_FALSE(workers_[3]->wait_for(0ms)) << "w3 died";
}

// The killed worker restarted on its port with its cache: the run takes it back at a frame
// boundary, returns to the 4-node plan (nothing to upload: its cache holds it) and still
// delivers every frame once, in order.
TEST_F(CliNodeLoss, ARestartedWorkerIsTakenBackIntoTheFullPlan) {
  const int frames = 600;
  const std::string cluster = write_paced_cluster(0.01);  // about 290 frames/s at most
  const std::size_t w0_loads = loads(0);
  ChildProcess run({DPUSHARD_CLI, "run", plan4(), "--cluster", cluster, "--frames",
                    std::to_string(frames), "--inflight", "4", "--seed", std::to_string(kSeed),
                    "--peer-timeout", "3", "--on-node-loss", "replan", "--frame-hashes", "--json"},
                   dir_ / "return.out", dir_ / "return.err");
  wait_for_load(0, w0_loads);
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before the kill";
  workers_[1]->signal(SIGKILL);
  ASSERT_TRUE(workers_[1]->wait_for(5s));
  wait_for_load(0, w0_loads + 1);  // running on w0, w2, w3
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before the restart";
  ASSERT_EQ(start_worker(1, {"--backend", "ref"}, ports_[1], dir_ / "cache-w1"), ports_[1]);
  const auto status = run.wait_for(90s);
  ASSERT_TRUE(status) << "the run hangs";
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << read_text(dir_ / "return.err");

  const auto result = json_of("return");
  expect_every_frame_once_in_order(result, frames);
  const auto& events = result["node_events"];
  ASSERT_EQ(events.size(), 2u) << events.dump(1) << "\n" << read_text(dir_ / "return.err");
  EXPECT_EQ(events[0]["kind"], "loss");
  EXPECT_EQ(events[0]["node"], "w1");
  EXPECT_EQ(events[1]["kind"], "return");
  EXPECT_EQ(events[1]["node"], "w1");
  EXPECT_EQ(events[1]["nodes_after"], nlohmann::json({"w0", "w1", "w2", "w3"}));
  EXPECT_EQ(events[1]["plan_after"], "experts");
  // It joined at a frame boundary: nothing was in flight to re-send, nothing to upload.
  EXPECT_EQ(events[1]["frames_resent"], 0);
  EXPECT_EQ(events[1]["upload_bytes"], 0);
  EXPECT_GE(events[1]["first_frame_s"].get<double>(), 0.0);
  EXPECT_GT(events[1]["detected_s"].get<double>(), events[0]["detected_s"].get<double>());
  // The restarted worker computed frames again.
  EXPECT_NE(read_text(dir_ / "w1.log").find("event=loaded"), std::string::npos);
}

// A worker whose device fails every frame (a sim worker with the test-only
// --sim-fail-frames, computing real values otherwise): its first two device_failed errors
// re-send the frames in flight on the same plan, the third loses the node, which is not
// called back (its worker still answers), and the survivors deliver every frame once, in
// order, with exec's outputs.
TEST_F(CliNodeLoss, RepeatedDeviceErrorsLoseTheNodeAndTheSurvivorsDeliverEveryFrameOnce) {
  const int frames = 400;
  workers_[1]->signal(SIGKILL);
  ASSERT_TRUE(workers_[1]->wait_for(5s));
  ASSERT_EQ(start_worker(1, {"--backend", "sim", "--sim-numerics", "--sim-fail-frames"}, ports_[1],
                         dir_ / "cache-w1"),
            ports_[1]);
  const std::string cluster = write_paced_cluster(0.01, 1);
  ASSERT_EQ(run_cli({"run", plan4(), "--cluster", cluster, "--frames", std::to_string(frames),
                     "--inflight", "4", "--seed", std::to_string(kSeed), "--peer-timeout", "1",
                     "--on-node-loss", "replan", "--frame-hashes", "--json"},
                    "device"),
            0)
      << read_text(dir_ / "device.err");

  const auto result = json_of("device");
  expect_every_frame_once_in_order(result, frames);
  const auto& events = result["node_events"];
  ASSERT_EQ(events.size(), 3u) << events.dump(1);  // no return: w1 is not called back
  for (int k = 0; k < 3; ++k) {
    const auto& e = events[static_cast<std::size_t>(k)];
    EXPECT_EQ(e["kind"], k < 2 ? "device_error" : "loss") << e.dump(1);
    EXPECT_EQ(e["node"], "w1");
    const std::string cause = e["cause"];
    EXPECT_NE(cause.find("device_failed (" + std::to_string(k + 1) + " of 3)"), std::string::npos)
        << cause;
    EXPECT_NE(cause.find("--sim-fail-frames"), std::string::npos) << cause;
  }
  // Every frame needs w1's expert on the 4-node plan: none completes until the third error
  // leaves w1 out, and the first frame on the survivors' plan ends that event.
  EXPECT_EQ(events[0]["first_frame_s"].get<double>(), -1.0);
  EXPECT_EQ(events[1]["first_frame_s"].get<double>(), -1.0);
  EXPECT_GE(events[2]["first_frame_s"].get<double>(), 0.0) << events[2].dump(1);
  // The errors below the limit keep the 4-node plan; the third leaves w1 out.
  EXPECT_EQ(events[0]["nodes_after"], nlohmann::json({"w0", "w1", "w2", "w3"}));
  EXPECT_EQ(events[1]["nodes_after"], nlohmann::json({"w0", "w1", "w2", "w3"}));
  EXPECT_EQ(events[2]["nodes_after"], nlohmann::json({"w0", "w2", "w3"}));
  EXPECT_GT(result["frames_resent"].get<std::int64_t>(), 0);
  EXPECT_TRUE(result["failed_frames"].empty());
  EXPECT_FALSE(workers_[1]->wait_for(0ms)) << "w1 (still answering) died";
}

// A lost node's address answered by another worker (another --name) is not taken back:
// one logged line says why, the run goes on without it, and the node itself, restarted
// there, is taken back.
TEST_F(CliNodeLoss, AReturnUnderAnotherNameIsRefusedAndTheNodeItselfIsTakenBack) {
  const int frames = 1000;
  const std::string cluster = write_paced_cluster(0.005);  // about 145 frames/s at most
  const std::size_t w0_loads = loads(0);
  ChildProcess run({DPUSHARD_CLI, "run", plan4(), "--cluster", cluster, "--frames",
                    std::to_string(frames), "--inflight", "4", "--seed", std::to_string(kSeed),
                    "--peer-timeout", "3", "--on-node-loss", "replan", "--frame-hashes", "--json"},
                   dir_ / "impostor-run.out", dir_ / "impostor-run.err");
  wait_for_load(0, w0_loads);
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before the kill";
  workers_[1]->signal(SIGKILL);
  ASSERT_TRUE(workers_[1]->wait_for(5s));
  wait_for_load(0, w0_loads + 1);  // running on w0, w2, w3
  {
    ChildProcess impostor(
        {DPUSHARD_CLI, "worker", "--listen", "127.0.0.1:" + std::to_string(ports_[1]), "--cache",
         (dir_ / "cache-impostor").string(), "--token-file", (dir_ / "token").string(), "--name",
         "impostor", "--backend", "ref"},
        dir_ / "impostor.out", dir_ / "impostor.log");
    ASSERT_TRUE(wait_for_text(dir_ / "impostor-run.err", "event=return_refused", 20s))
        << read_text(dir_ / "impostor-run.err") << read_text(dir_ / "impostor.log");
    std::this_thread::sleep_for(1500ms);  // called again (back-off up to 1 s): still refused
    impostor.signal(SIGKILL);
    ASSERT_TRUE(impostor.wait_for(5s));
  }
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before w1 came back";
  ASSERT_EQ(start_worker(1, {"--backend", "ref"}, ports_[1], dir_ / "cache-w1"), ports_[1]);
  const auto status = run.wait_for(120s);
  ASSERT_TRUE(status) << "the run hangs";
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << read_text(dir_ / "impostor-run.err");

  const std::string err = read_text(dir_ / "impostor-run.err");
  // One line, however often the impostor was called.
  std::size_t refusals = 0;
  for (auto at = err.find("event=return_refused"); at != std::string::npos;
       at = err.find("event=return_refused", at + 1))
    ++refusals;
  EXPECT_EQ(refusals, 1u) << err;
  EXPECT_NE(err.find("node=w1 address=127.0.0.1:" + std::to_string(ports_[1]) +
                     " reason=\"the worker at 127.0.0.1:" + std::to_string(ports_[1]) +
                     " is now 'impostor', not 'w1' as when the run began\""),
            std::string::npos)
      << err;
  const auto result = json_of("impostor-run");
  expect_every_frame_once_in_order(result, frames);
  const auto& events = result["node_events"];
  ASSERT_EQ(events.size(), 2u) << events.dump(1);
  EXPECT_EQ(events[0]["kind"], "loss");
  EXPECT_EQ(events[1]["kind"], "return");
  EXPECT_EQ(events[1]["node"], "w1");
  EXPECT_EQ(events[1]["nodes_after"], nlohmann::json({"w0", "w1", "w2", "w3"}));
  // The impostor never got a job.
  EXPECT_EQ(read_text(dir_ / "impostor.log").find("event=loaded"), std::string::npos);
}

// No plan serves the nodes left (here: none is left): every frame not yet completed fails
// with one coded error, no_plan, and the run says so and exits 1.
TEST_F(CliNodeLoss, FramesNoPlanCanServeFailWithOneCodedErrorEach) {
  const int frames = 400;
  ASSERT_EQ(run_cli({"split", model4_, "--nodes", "1", "-o", (dir_ / "plan1").string()}, "split1"),
            0);
  const auto cluster = dir_ / "one.yaml";
  std::ofstream(cluster) << "token_file: token\nlink_gbps: 0.01\nlink_emulation: paced\nnodes:\n"
                         << "  - {name: w0, address: '127.0.0.1:" << ports_[0]
                         << "', backend: ref}\n";
  const std::size_t w0_loads = loads(0);
  ChildProcess run(
      {DPUSHARD_CLI, "run", (dir_ / "plan1").string(), "--cluster", cluster.string(), "--frames",
       std::to_string(frames), "--inflight", "4", "--on-node-loss", "replan", "--json"},
      dir_ / "none-left.out", dir_ / "none-left.err");
  wait_for_load(0, w0_loads);
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before the kill";
  workers_[0]->signal(SIGKILL);
  const auto status = run.wait_for(60s);
  ASSERT_TRUE(status) << "the run hangs";
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  const std::string err = read_text(dir_ / "none-left.err");
  EXPECT_NE(err.find("frames could not be served: no_plan: no node is left"), std::string::npos)
      << err;
  const auto result = json_of("none-left");
  EXPECT_FALSE(result["complete"].get<bool>());
  std::int64_t failed = 0;
  for (const auto& range : result["failed_frames"]) {
    EXPECT_EQ(range["code"], "no_plan");
    failed += range["last"].get<std::int64_t>() - range["first"].get<std::int64_t>() + 1;
  }
  // Every frame either completed or failed with its code, none both, none neither.
  EXPECT_GT(failed, 0);
  EXPECT_EQ(result["frames_completed"].get<std::int64_t>() + failed, frames);
  EXPECT_EQ(result["failed_frames"].back()["last"], frames - 1);
  ASSERT_EQ(result["node_events"].size(), 1u);
  EXPECT_EQ(result["node_events"][0]["node"], "w0");
}

// Without a model to plan with, replan is refused before any node is contacted.
TEST_F(CliNodeLoss, ReplanWithoutTheSourceModelIsRefusedInOneLine) {
  write_cluster(ports_, "ref", "plain.yaml");
  const std::string cluster = (dir_ / "plain.yaml").string();
  // The fixture's plan was made in process: it records no model file.
  EXPECT_EQ(
      run_cli({"run", (dir_ / "plan").string(), "--cluster", cluster, "--on-node-loss", "replan"},
              "no-model"),
      1);
  const std::string err = read_text(dir_ / "no-model.err");
  EXPECT_NE(err.find("--model"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  // Another model than the plan's is refused by its sha256.
  EXPECT_EQ(run_cli({"run", plan4(), "--cluster", cluster, "--on-node-loss", "replan", "--model",
                     (dir_ / "model_int.xmodel").string()},
                    "other-model"),
            1);
  EXPECT_NE(read_text(dir_ / "other-model.err").find("not the model the plan was split from"),
            std::string::npos)
      << read_text(dir_ / "other-model.err");
  EXPECT_NE(
      run_cli({"run", plan4(), "--cluster", cluster, "--on-node-loss", "sometimes"}, "bad-policy"),
      0);
}

}  // namespace
}  // namespace dpushard::testing
