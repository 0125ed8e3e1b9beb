// Full disks under `run`: a worker whose cache cannot take a fragment, and a results file
// that does not fit. Each ends in one line with the OS's reason and leaves no half-written
// file; a finished run's JSON still reaches stdout. The disks are small tmpfs mounts
// (tests/support/small_disk.hpp); without the right to mount, the tests skip saying so.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_cluster_fixture.hpp"
#include "support/small_disk.hpp"

namespace dpushard::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) names.push_back(entry.path().filename().string());
  return names;
}

// `run PLAN --cluster CLUSTER --frames N --json`, then `extra`.
std::vector<std::string> run_args(const std::filesystem::path& plan,
                                  const std::filesystem::path& cluster, int frames,
                                  const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {
      "run",      plan.string(),          "--cluster", cluster.string(),
      "--frames", std::to_string(frames), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// One line of error that names worker w1 first.
void expect_one_line_about_w1(const std::string& err) {
  EXPECT_EQ(err.rfind("dpushard: error: node 'w1'", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST_F(CliCluster, AFullDiskUnderRunOutKeepsTheJsonOnStdoutAndSaysWhy) {
  SmallDisk disk(dir_ / "disk", 16 * 1024);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  disk.fill();
  write_cluster({start_worker(0), start_worker(1), start_worker(2)});
  const auto out = disk.path() / "results.json";
  EXPECT_EQ(
      run_cli(run_args(dir_ / "plan", dir_ / "cluster.yaml", 3, {"--out", out.string()}), "full"),
      1);
  EXPECT_TRUE(json_of("full")["complete"].get<bool>());
  const std::string err = read_text(dir_ / "full.err");
  EXPECT_EQ(err,
            "dpushard: error: --out " + out.string() + ": cannot write: No space left on device\n");
  EXPECT_EQ(files_in(disk.path()), std::vector<std::string>{"filler"});
}

TEST_F(CliCluster, AWorkerWhoseCacheDiskIsFullRefusesTheFragmentInOneLine) {
  SmallDisk disk(dir_ / "disk", 64 * 1024);
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  // w1 caches on the small disk; its fragments (about 100 KB each) do not fit.
  write_cluster({start_worker(0), start_worker(1, {"--backend", "ref"}, 0, disk.path() / "cache"),
                 start_worker(2)});
  EXPECT_EQ(run_cli(run_args(dir_ / "plan", dir_ / "cluster.yaml", 2), "cachefull"), 1);
  const std::string err = read_text(dir_ / "cachefull.err");
  expect_one_line_about_w1(err);
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  // No partial fragment, no temporary file, and the worker still serves.
  EXPECT_EQ(files_in(disk.path()), std::vector<std::string>{});
  EXPECT_FALSE(workers_[1]->wait_for(0ms)) << "w1 died";
}

// A worker under an address-space limit (`ulimit -v`, here prlimit --as) too tight for a
// fragment refused it with whatever the failed allocation said, or died; it now refuses it
// before loading, naming the fragment, what it needs and what the limit leaves, and serves on.
TEST_F(CliCluster, AWorkerUnderAMemoryLimitRefusesAFragmentItCannotHold) {
  if (!std::filesystem::exists("/usr/bin/prlimit")) GTEST_SKIP() << "no /usr/bin/prlimit";
  ZooSpec spec;
  spec.params = 12'000'000;  // three experts of about 16 MB files each: 47 MB to load
  spec.experts = 3;
  spec.input = {32, 32, 3};
  spec.classes = 10;
  write_xmodel(make_cnn(spec), dir_ / "big_int.xmodel");
  SplitOptions options;
  options.nodes = 3;
  options.strategy = "experts";
  SplitResult split = split_model(read_xmodel(dir_ / "big_int.xmodel"), options);
  write_split(split, dir_ / "big");
  // `dpushard worker` starts at about 67 MB of address space; 100 MB leaves it some 30.
  write_cluster(
      {start_worker(0),
       start_worker(1, {"--backend", "ref"}, 0, {}, {"/usr/bin/prlimit", "--as=100000000"}),
       start_worker(2)});
  EXPECT_EQ(run_cli(run_args(dir_ / "big", dir_ / "cluster.yaml", 1), "tight"), 1);
  const std::string err = read_text(dir_ / "tight.err");
  expect_one_line_about_w1(err);
  EXPECT_NE(err.find("bad_fragment: fragment 'experts1' needs about "), std::string::npos) << err;
  EXPECT_NE(err.find(" MB to load (3 x its "), std::string::npos) << err;
  EXPECT_NE(err.find(" left under its memory limit (RLIMIT_AS 100.0 MB)"), std::string::npos)
      << err;
  EXPECT_FALSE(workers_[1]->wait_for(0ms)) << "w1 died: " << read_text(dir_ / "w1.log");
  // The same worker still runs a plan that fits.
  EXPECT_EQ(run_cli(run_args(dir_ / "plan", dir_ / "cluster.yaml", 2), "fits"), 0)
      << read_text(dir_ / "fits.err");
}

}  // namespace
}  // namespace dpushard::testing
