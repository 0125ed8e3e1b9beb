// The defects a probe of `run` found (issue 30), each end to end on worker processes:
// the shortest --peer-timeout on a healthy cluster, numbers a type cannot hold, a failing
// --out after a finished run, one worker listed under two host names, and SIGINT/SIGTERM.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_cluster_fixture.hpp"

namespace dpushard::testing {
namespace {

using namespace std::chrono_literals;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The worker's first heartbeat tick used to wait 250 ms whatever HELLO asked for, so every
// run at --peer-timeout 0.1 lost a healthy node ("no message from the peer for 100 ms").
TEST_F(CliCluster, AHealthyRunCompletesAtTheShortestPeerTimeout) {
  write_cluster({start_worker(0), start_worker(1), start_worker(2)});
  const std::string plan = (dir_ / "plan").string(), cluster = (dir_ / "cluster.yaml").string();
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string name = "short" + std::to_string(attempt);
    ASSERT_EQ(run_cli({"run", plan, "--cluster", cluster, "--frames", "40", "--peer-timeout", "0.1",
                       "--seed", "2", "--json"},
                      name),
              0)
        << read_text(dir_ / (name + ".err"));
    EXPECT_TRUE(json_of(name)["complete"].get<bool>());
  }
}

// nan passed CLI11's range check (every comparison with NaN is false) and became
// "no message from the peer for -9223372036854775808 ms"; 2^64 became 2^64-1 silently.
TEST_F(CliCluster, NumbersATypeCannotHoldAreRefusedInOneLine) {
  write_cluster({1});
  const std::string plan = (dir_ / "plan").string(), cluster = (dir_ / "cluster.yaml").string();
  const std::string model = (dir_ / "model_int.xmodel").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", plan, "--cluster", cluster, "--peer-timeout", "nan"},
       "--peer-timeout: 'nan' is not a finite number"},
      {{"run", plan, "--cluster", cluster, "--peer-timeout", "inf"},
       "--peer-timeout: Value inf not in range"},
      {{"run", plan, "--cluster", cluster, "--seed", "18446744073709551616"},
       "--seed: '18446744073709551616' is out of range (0 to 18446744073709551615)"},
      {{"run", plan, "--cluster", cluster, "--frames", "99999999999999999999"},
       "--frames: Value 99999999999999999999 not in range"},
      {{"exec", model, "--seed", "18446744073709551616"},
       "--seed: '18446744073709551616' is out of range"},
      {{"exec", model, "--repeat", "1e3"}, "--repeat: Value 1e3 not in range"},
      {{"split", model, "--nodes", "2", "--link-gbps", "nan", "-o", (dir_ / "p2").string()},
       "--link-gbps: 'nan' is not a finite number"},
      {{"split", model, "--nodes", "2", "--max-latency-ms", "1e999", "-o", (dir_ / "p2").string()},
       "--max-latency-ms: '1e999' is not a finite number"},
      {{"worker", "--listen", "127.0.0.1:0", "--backend", "ref", "--max-frame-mb",
        "18446744073709551616"},
       "--max-frame-mb: Value 18446744073709551616 not in range"},
      {{"zoo", "cnn", "--seed", "18446744073709551616", "-o", (dir_ / "z.xmodel").string()},
       "--seed: '18446744073709551616' is out of range"},
      {{"predict", model, "--calibrate-fps", "-inf"}, "--calibrate-fps"},
      {{"split", model, "--nodes", "2", "--min-parallel", "nan", "-o", (dir_ / "p2").string()},
       "--min-parallel: 'nan' is not a finite number"},
      {{"worker", "--listen", "127.0.0.1:0", "--backend", "ref", "--queue", "4294967296"},
       "--queue"},
  };
  int i = 0;
  for (const auto& [args, want] : cases) {
    const std::string name = "bad" + std::to_string(i++);
    EXPECT_EQ(run_cli(args, name, 30s), 2) << want;
    const std::string err = read_text(dir_ / (name + ".err"));
    EXPECT_EQ(err.rfind("dpushard: error: ", 0), 0u) << err;
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_EQ(count_of(err, "\n"), 1u) << err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "p2"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "z.xmodel"));
}

// `--out` failing at the end (a missing folder here; a full disk in the fault harness)
// threw the finished run away: exit 1 and nothing on stdout despite --json.
TEST_F(CliCluster, AFinishedRunsJsonReachesStdoutWhenOutFailsWithTheErrorAfterIt) {
  write_cluster({start_worker(0), start_worker(1), start_worker(2)});
  const std::string plan = (dir_ / "plan").string(), cluster = (dir_ / "cluster.yaml").string();
  const auto out = dir_ / "no-such-folder" / "results.json";
  EXPECT_EQ(
      run_cli({"run", plan, "--cluster", cluster, "--frames", "4", "--json", "--out", out.string()},
              "outfails"),
      1);
  const auto printed = json_of("outfails");
  EXPECT_TRUE(printed["complete"].get<bool>());
  EXPECT_EQ(printed["frames_completed"], 4);
  const std::string err = read_text(dir_ / "outfails.err");
  EXPECT_EQ(err.rfind("dpushard: error: --out " + out.string() + ": cannot create", 0), 0u) << err;
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
  EXPECT_EQ(count_of(err, "\n"), 1u) << err;
  EXPECT_FALSE(std::filesystem::exists(out.parent_path()));
}

// Two host names of one worker pass cluster.yaml's check (it does not resolve names) and
// are caught once connected: the worker would refuse the second LOAD of the job.
TEST_F(CliCluster, OneWorkerReachedUnderTwoNamesIsRefusedBeforeAnyUpload) {
  const std::uint16_t port = start_worker(0), other = start_worker(1);
  std::ofstream(dir_ / "twice.yaml") << "token_file: token\nnodes:\n"
                                     << "  - {name: a, address: '127.0.0.1:" << port << "'}\n"
                                     << "  - {name: b, address: 'localhost:" << port << "'}\n"
                                     << "  - {name: c, address: '127.0.0.1:" << other << "'}\n";
  EXPECT_EQ(run_cli({"run", (dir_ / "plan").string(), "--cluster", (dir_ / "twice.yaml").string(),
                     "--frames", "2"},
                    "twice"),
            1);
  const std::string err = read_text(dir_ / "twice.err");
  EXPECT_NE(err.find("reached 127.0.0.1:" + std::to_string(port) + ", the worker of node"),
            std::string::npos)
      << err;
  EXPECT_EQ(count_of(read_text(dir_ / "w0.log"), "event=fragment_stored"), 0u);
}

// SIGINT killed `run` at once, without a word or its --out. Now the orchestrator unloads
// the job on every node (their queued frames are dropped), writes --out marked interrupted
// and exits 130; SIGTERM the same.
TEST_F(CliCluster, SigintAndSigtermStopARunCleanly) {
  write_cluster({start_worker(0), start_worker(1), start_worker(2)});
  const std::string plan = (dir_ / "plan").string(), cluster = (dir_ / "cluster.yaml").string();
  for (const int signal : {SIGINT, SIGTERM}) {
    const std::string name = signal == SIGINT ? "sigint" : "sigterm";
    const std::size_t loads_before = count_of(read_text(dir_ / "w2.log"), "event=loaded");
    // Jobs dropped because the orchestrator asked (UNLOAD), not because its connection closed.
    const auto unloads = [&](int w) {
      return count_of(read_text(dir_ / ("w" + std::to_string(w) + ".log")), "cause=\"UNLOAD\"");
    };
    std::vector<std::size_t> unloads_before;
    for (int w = 0; w < 3; ++w) unloads_before.push_back(unloads(w));
    ChildProcess run({DPUSHARD_CLI, "run", plan, "--cluster", cluster, "--frames", "100000000",
                      "--inflight", "3", "--json", "--out", (dir_ / (name + ".json")).string()},
                     dir_ / (name + ".out"), dir_ / (name + ".err"));
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (count_of(read_text(dir_ / "w2.log"), "event=loaded") == loads_before) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "never loaded";
      std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(300ms);
    run.signal(signal);
    const auto at = std::chrono::steady_clock::now();
    const auto status = run.wait_for(10s);
    ASSERT_TRUE(status) << name << ": run did not stop";
    EXPECT_LT(std::chrono::steady_clock::now() - at, 3s);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 130) << *status;
    const std::string err = read_text(dir_ / (name + ".err"));
    EXPECT_NE(err.find(std::string("dpushard: error: interrupted by ") +
                       (signal == SIGINT ? "SIGINT" : "SIGTERM")),
              std::string::npos)
        << err;
    const auto written = nlohmann::json::parse(read_text(dir_ / (name + ".json")));
    EXPECT_TRUE(written["interrupted"].get<bool>());
    EXPECT_FALSE(written["complete"].get<bool>());
    EXPECT_GT(written["frames_completed"].get<std::int64_t>(), 0);
    EXPECT_EQ(json_of(name), written);
    // Every node dropped the job when asked, not when it noticed a closed connection.
    for (int w = 0; w < 3; ++w) {
      const auto until = std::chrono::steady_clock::now() + 5s;
      while (unloads(w) == unloads_before[static_cast<std::size_t>(w)] &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(10ms);
      EXPECT_GT(unloads(w), unloads_before[static_cast<std::size_t>(w)])
          << "w" << w << ": " << read_text(dir_ / ("w" + std::to_string(w) + ".log"));
    }
  }
  for (int w = 0; w < 3; ++w) EXPECT_FALSE(workers_[static_cast<std::size_t>(w)]->wait_for(0ms));
}

}  // namespace
}  // namespace dpushard::testing
