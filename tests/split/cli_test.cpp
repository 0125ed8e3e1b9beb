// `dpushard split`, `dpushard run --local` and `dpushard zoo micro` run as a user would:
// the built binary, its exit code, one JSON object on stdout, one error line on stderr.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::ScratchDir;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Result run_cli(const ScratchDir& dir, const std::string& args) {
  const auto out = dir / "stdout.txt";
  const auto err = dir / "stderr.txt";
  const std::string command = quoted(DPUSHARD_CLI) + " " + args + " >" + quoted(out.string()) +
                              " 2>" + quoted(err.string());
  const int status = std::system(command.c_str());
  Result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = testing::read_bytes(out);
  r.err = testing::read_bytes(err);
  return r;
}

std::vector<std::string> output_hashes(const std::string& out) {
  std::vector<std::string> hashes;
  for (const auto& t : json::parse(out).at("outputs")) hashes.push_back(t.at("sha256"));
  return hashes;
}

TEST(CliSplit, RunLocalPrintsTheSameOutputsAsExec) {
  ScratchDir dir;
  const std::string model = quoted((dir / "m_int.xmodel").string());
  const std::string plan = quoted((dir / "plan").string());
  ASSERT_EQ(
      run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " + model)
          .exit_code,
      0);
  const Result split =
      run_cli(dir, "split " + model + " --nodes 3 --strategy experts -o " + plan + " --json");
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const json summary = json::parse(split.out);
  EXPECT_EQ(summary.at("strategy"), "experts");
  EXPECT_EQ(summary.at("fragments").size(), 5u);
  EXPECT_TRUE(std::filesystem::exists(dir / "plan" / "plan.yaml"));
  EXPECT_TRUE(std::filesystem::exists(dir / "plan" / "fragments" / "stem_int.xmodel"));

  const Result exec = run_cli(dir, "exec " + model + " --seed 5 --json");
  const Result run = run_cli(dir, "run " + plan + " --local --seed 5 --json");
  ASSERT_EQ(exec.exit_code, 0) << exec.err;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(output_hashes(run.out), output_hashes(exec.out));
  EXPECT_EQ(json::parse(run.out).at("outputs"), json::parse(exec.out).at("outputs"));

  // Human output goes to stderr.
  const Result human = run_cli(dir, "split " + model + " --nodes 2 --strategy pipeline -o " + plan);
  EXPECT_EQ(human.exit_code, 0);
  EXPECT_TRUE(human.out.empty());
  EXPECT_THAT(human.err, HasSubstr("pipeline on 2 nodes"));
}

TEST(CliSplit, BadInputIsOneErrorLine) {
  ScratchDir dir;
  const std::string resnet = quoted(testing::fixture(testing::kResNetInt).string());
  const std::string plan = quoted((dir / "plan").string());
  ASSERT_EQ(run_cli(dir, "split " + resnet + " --nodes 2 --strategy pipeline -o " + plan).exit_code,
            0);
  std::filesystem::remove(dir / "plan" / "fragments" / "stage1_int.xmodel");
  for (const std::string& args :
       {"run " + plan + " --local", "run " + plan, "split /nonexistent.xmodel --nodes 2 -o " + plan,
        "split " + resnet + " --nodes 2 --cuts nosuchop --strategy pipeline -o " + plan}) {
    const Result r = run_cli(dir, args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_THAT(r.err, HasSubstr("dpushard: error: ")) << args;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": " << r.err;
  }
}

TEST(CliMicro, ListsAndWritesTheSuite) {
  ScratchDir dir;
  const Result list = run_cli(dir, "zoo micro --list --json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json j = json::parse(list.out);
  ASSERT_GE(j.at("models").size(), 28u);
  for (const auto& m : j.at("models")) {
    const std::string v = m.at("expected");
    EXPECT_TRUE(v == "dpu" || v == "dpu+boundary" || v == "cpu") << m.at("name");
    EXPECT_FALSE(m.at("description").get<std::string>().empty());
  }
  const Result all = run_cli(dir, "zoo micro --all -o " + quoted((dir / "micro").string()));
  ASSERT_EQ(all.exit_code, 0) << all.err;
  for (const auto& m : j.at("models"))
    EXPECT_TRUE(
        std::filesystem::exists(dir / "micro" / (m.at("name").get<std::string>() + "_int.xmodel")));
  EXPECT_EQ(run_cli(dir, "zoo micro").exit_code, 1);
}

}  // namespace
}  // namespace dpushard
