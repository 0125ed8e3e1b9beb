// `run --cluster --input` end to end: three `dpushard worker` processes on 127.0.0.1
// (ephemeral ports) run a plan of each strategy on an .npy batch, a folder of .npy files
// (one of the wrong shape) and a folder of images (one truncated); the --output folder must
// be byte for byte the one `exec --input` writes for the same input. Then a worker is
// killed mid-run under --on-node-loss replan and the outputs must still be exec's, all of
// them.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_cluster_fixture.hpp"
#include "dpushard/base/npy.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int kFrames = 6;

// `frames` int8 frames of the fixture's 32x32x3 input, frame f from seed + f.
NpyArray random_batch(int frames, std::uint64_t seed) {
  NpyArray a;
  a.type = NpyArray::Type::Int8;
  a.shape = {frames, 32, 32, 3};
  for (int f = 0; f < frames; ++f) {
    const QTensor t = random_qtensor("x", {1, 32, 32, 3}, 0, seed + std::uint64_t(f));
    a.data.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  }
  return a;
}

// Every file of a folder by name, with its bytes.
std::map<std::string, std::string> folder_files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    files[entry.path().filename().string()] = read_text(entry.path());
  return files;
}

// Both folders hold the same files, byte for byte, and `npy_files` outputs among them.
void expect_same_folder(const fs::path& exec, const fs::path& run, std::size_t npy_files) {
  ASSERT_TRUE(fs::is_directory(run)) << run;
  const auto want = folder_files(exec);
  const auto got = folder_files(run);
  std::size_t npy = 0;
  for (const auto& [name, bytes] : want)
    if (name.ends_with(".npy")) ++npy;
  EXPECT_EQ(npy, npy_files) << exec;
  EXPECT_EQ(want.count("frames.jsonl"), 1u);
  std::vector<std::string> want_names, got_names;
  for (const auto& [name, bytes] : want) want_names.push_back(name);
  for (const auto& [name, bytes] : got) got_names.push_back(name);
  ASSERT_EQ(got_names, want_names) << run;
  for (const auto& [name, bytes] : want) EXPECT_TRUE(got.at(name) == bytes) << name << " differs";
}

class CliClusterFrames : public CliCluster, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    CliCluster::SetUp();
    std::vector<std::uint16_t> ports;
    for (int i = 0; i < 3; ++i) ports.push_back(start_worker(i));
    write_cluster(ports);
    const NpyArray batch = random_batch(kFrames, 40);
    write_npy(dir_ / "batch.npy", batch);
    fs::create_directories(dir_ / "folder");
    for (int f = 0; f < kFrames; ++f) {
      NpyArray frame = batch;
      frame.shape = {1, 32, 32, 3};
      frame.data = batch.data.substr(std::size_t(f) * 3072, 3072);
      write_npy(dir_ / "folder" / ("f" + std::to_string(f) + ".npy"), frame);
    }
    NpyArray wrong = batch;  // a batch where a frame is expected: one line, the others run
    wrong.shape = {2, 32, 32, 3};
    wrong.data.resize(2 * 3072);
    write_npy(dir_ / "folder" / "f2.npy", wrong);
  }

  // A PIL JPEG, grayscale PNG and RGBA PNG, and a truncated JPEG.
  void make_images() {
    const fs::path script = dir_ / "make_images.py";
    std::ofstream(script)
        << "import sys, numpy as np\nfrom PIL import Image\nd = sys.argv[1]\n"
           "r = np.random.default_rng(5)\n"
           "Image.fromarray(r.integers(0, 256, (45, 61, 3), np.uint8)).save(d + '/a.jpg')\n"
           "Image.fromarray(r.integers(0, 256, (40, 39), np.uint8), 'L').save(d + '/b.png')\n"
           "Image.fromarray(r.integers(0, 256, (33, 70, 4), np.uint8), 'RGBA').save(d + "
           "'/c.png')\n"
           "data = open(d + '/a.jpg', 'rb').read()\n"
           "open(d + '/d_truncated.jpg', 'wb').write(data[: len(data) // 2])\n";
    fs::create_directories(dir_ / "images");
    ASSERT_EQ(std::system(("/usr/bin/python3 '" + script.string() + "' '" +
                           (dir_ / "images").string() + "'")
                              .c_str()),
              0)
        << "needs /usr/bin/python3 with python3-pil and python3-numpy";
  }

  // exec and run --cluster on `input` with `flags`: the same exit code and output folder.
  void expect_cluster_matches_exec(const std::string& kind, const std::string& input,
                                   const std::vector<std::string>& flags, int exit_code,
                                   std::size_t npy_files) {
    SCOPED_TRACE(kind);
    std::vector<std::string> exec = {"exec",     (dir_ / "model_int.xmodel").string(),
                                     "--input",  input,
                                     "--output", (dir_ / ("exec-" + kind)).string()};
    exec.insert(exec.end(), flags.begin(), flags.end());
    ASSERT_EQ(run_cli(exec, "exec-" + kind), exit_code)
        << read_text(dir_ / ("exec-" + kind + ".err"));
    std::vector<std::string> run = {"run",        (dir_ / "plan-cli").string(),
                                    "--cluster",  (dir_ / "cluster.yaml").string(),
                                    "--input",    input,
                                    "--output",   (dir_ / ("run-" + kind)).string(),
                                    "--inflight", "3",
                                    "--json"};
    run.insert(run.end(), flags.begin(), flags.end());
    ASSERT_EQ(run_cli(run, "run-" + kind), exit_code) << read_text(dir_ / ("run-" + kind + ".err"));
    expect_same_folder(dir_ / ("exec-" + kind), dir_ / ("run-" + kind), npy_files);
    const auto report = json_of("run-" + kind);
    EXPECT_TRUE(report["complete"].get<bool>());
    EXPECT_EQ(report["errors"].size(), exit_code == 0 ? 0u : 1u);
  }
};

TEST_P(CliClusterFrames, EveryFrameOfAnNpyBatchAndFolderIsExecsBytes) {
  ASSERT_EQ(run_cli({"split", (dir_ / "model_int.xmodel").string(), "--nodes", "3", "--strategy",
                     GetParam(), "-o", (dir_ / "plan-cli").string()},
                    "split"),
            0)
      << read_text(dir_ / "split.err");
  // int8 and dequantized float32 for each of the 6 frames.
  expect_cluster_matches_exec("batch", (dir_ / "batch.npy").string(), {"--float"}, 0, 2 * kFrames);
  // f2.npy holds a batch: one error line, the 5 others run.
  expect_cluster_matches_exec("folder", (dir_ / "folder").string(), {}, 1, kFrames - 1);
  EXPECT_NE(read_text(dir_ / "run-folder.err").find("f2.npy"), std::string::npos);
}

// A test of its own, so that a build without images (the aarch64 cross build) still runs
// the npy cases above and leaves only this one out.
TEST_P(CliClusterFrames, EveryImageOfAFolderIsExecsBytes) {
  if (!DPUSHARD_TEST_IMAGES) GTEST_SKIP() << "built without DPUSHARD_WITH_IMAGES";
  ASSERT_EQ(run_cli({"split", (dir_ / "model_int.xmodel").string(), "--nodes", "3", "--strategy",
                     GetParam(), "-o", (dir_ / "plan-cli").string()},
                    "split"),
            0)
      << read_text(dir_ / "split.err");
  make_images();
  expect_cluster_matches_exec("images", (dir_ / "images").string(), {"--top-k", "3"}, 1, 3);
  EXPECT_NE(read_text(dir_ / "run-images.err").find("d_truncated.jpg: corrupt or truncated JPEG"),
            std::string::npos)
      << read_text(dir_ / "run-images.err");
}

// hybrid on 3 nodes: the planner's choice for that count (no 2x2); auto: whatever it picks.
INSTANTIATE_TEST_SUITE_P(Strategies, CliClusterFrames,
                         ::testing::Values("experts", "pipeline", "replicate", "hybrid", "auto"));

// A worker killed mid-run under --on-node-loss replan: the frames it held are re-sent with
// the same inputs, and the --output folder is still exec's, every frame of it.
TEST_F(CliCluster, FramesFromAnInputSurviveAKilledWorkerUnderReplan) {
  constexpr int frames = 300;
  ASSERT_EQ(run_cli({"split", (dir_ / "model_int.xmodel").string(), "--nodes", "3", "--strategy",
                     "experts", "-o", (dir_ / "plan-cli").string()},
                    "split"),
            0)
      << read_text(dir_ / "split.err");
  write_npy(dir_ / "batch.npy", random_batch(frames, 70));
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < 3; ++i) ports.push_back(start_worker(i));
  // Paced, so the run lasts past the kill whatever the machine's speed.
  std::ofstream(dir_ / "paced.yaml")
      << "token_file: token\nlink_gbps: 0.01\nlink_emulation: paced\n"
      << "nodes:\n";
  for (std::size_t i = 0; i < ports.size(); ++i)
    std::ofstream(dir_ / "paced.yaml", std::ios::app)
        << "  - {name: w" << i << ", address: '127.0.0.1:" << ports[i] << "', backend: ref}\n";
  ASSERT_EQ(run_cli({"exec", (dir_ / "model_int.xmodel").string(), "--input",
                     (dir_ / "batch.npy").string(), "--output", (dir_ / "exec-out").string()},
                    "exec"),
            0);
  const std::size_t w2_loads = loads(2);
  ChildProcess run({DPUSHARD_CLI, "run", (dir_ / "plan-cli").string(), "--cluster",
                    (dir_ / "paced.yaml").string(), "--input", (dir_ / "batch.npy").string(),
                    "--output", (dir_ / "run-out").string(), "--inflight", "4", "--peer-timeout",
                    "1", "--on-node-loss", "replan", "--frame-hashes", "--json"},
                   dir_ / "replan.out", dir_ / "replan.err");
  wait_for_load(2, w2_loads);
  std::this_thread::sleep_for(300ms);
  ASSERT_FALSE(run.wait_for(0ms)) << "the run ended before the kill";
  workers_[1]->signal(SIGKILL);
  const auto status = run.wait_for(90s);
  ASSERT_TRUE(status) << "the run hangs";
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << read_text(dir_ / "replan.err");
  const auto result = json_of("replan");
  ASSERT_EQ(result["node_events"].size(), 1u) << result["node_events"].dump(1);
  EXPECT_EQ(result["node_events"][0]["node"], "w1");
  EXPECT_EQ(result["node_events"][0]["nodes_after"], nlohmann::json({"w0", "w2"}));
  EXPECT_GT(result["frames_resent"].get<int>(), 0);  // the window is never empty mid-run
  EXPECT_EQ(result["frames_completed"], frames);
  ASSERT_EQ(result["frame_outputs"].size(), std::size_t(frames));
  for (int f = 0; f < frames; ++f) EXPECT_EQ(result["frame_outputs"][std::size_t(f)]["frame"], f);
  expect_same_folder(dir_ / "exec-out", dir_ / "run-out", frames);
}

// Bad combinations are usage errors; a single input that cannot be read is the command's
// one error line, before any node is contacted (the cluster here has none listening).
TEST_F(CliCluster, ClusterInputsRefusedInOneLine) {
  write_npy(dir_ / "batch.npy", random_batch(2, 1));
  write_cluster({1});  // port 1: nothing listens
  const std::string plan = (dir_ / "plan").string(), cluster = (dir_ / "cluster.yaml").string();
  EXPECT_EQ(run_cli({"run", plan, "--cluster", cluster, "--input", (dir_ / "batch.npy").string(),
                     "--frames", "3"},
                    "frames"),
            2);
  EXPECT_NE(read_text(dir_ / "frames.err").find("--frames and --input"), std::string::npos);
  EXPECT_EQ(
      run_cli({"run", plan, "--cluster", cluster, "--output", (dir_ / "out").string()}, "output"),
      2);
  EXPECT_NE(read_text(dir_ / "output.err").find("--output with --cluster needs --input"),
            std::string::npos);
  std::ofstream(dir_ / "bad.npy") << "not an npy file";
  EXPECT_EQ(
      run_cli({"run", plan, "--cluster", cluster, "--input", (dir_ / "bad.npy").string()}, "bad"),
      1);
  const std::string err = read_text(dir_ / "bad.err");
  EXPECT_NE(err.find("bad.npy"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
}  // namespace dpushard::testing
