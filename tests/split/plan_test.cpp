// plan.yaml: written and read back unchanged; corrupt or inconsistent plans rejected with
// one line naming what is wrong.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "dpushard/base/sha256.hpp"
#include "dpushard/plan/fragment_io.hpp"
#include "dpushard/plan/local_run.hpp"
#include "dpushard/plan/plan_check.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "split/split_helpers.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;
using testing::ScratchDir;

class PlanFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const Graph g = testing::fork_join_model({2, 2, 2});
    SplitOptions o;
    o.nodes = 3;
    o.strategy = "experts";
    o.model_file = "forkjoin_int.xmodel";
    o.model_sha256 = std::string(64, 'a');
    SplitResult r = split_model(g, o);
    plan_ = write_split(r, dir_.path());
  }

  // The error reading the plan folder after `edit`, or "" when it reads fine.
  std::string error_after(const std::function<void(Plan&)>& edit) {
    Plan p = plan_;
    edit(p);
    write_plan(p, dir_.path());
    try {
      const Plan read = read_plan(dir_.path());
      check_plan_files(read, dir_.path());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  std::string error_of_text(const std::string& text) {
    try {
      plan_from_yaml(text, "plan.yaml");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  ScratchDir dir_;
  Plan plan_;
};

TEST_F(PlanFiles, ReadBackEqualsWhatWasWritten) {
  const Plan read = read_plan(dir_.path());
  EXPECT_EQ(read, plan_);
  EXPECT_EQ(plan_from_yaml(plan_to_yaml(plan_), "x"), plan_);
  EXPECT_NO_THROW(check_plan_files(read, dir_.path()));
  EXPECT_EQ(read_plan(dir_.path() / "plan.yaml"), plan_);
  for (const auto& f : read.fragments) {
    EXPECT_EQ(f.sha256, sha256_file(dir_.path() / f.file));
    EXPECT_EQ(f.sha256.size(), 64u);
  }
}

// --max-latency-ms is recorded (only when given) and read back; a negative bound is refused.
TEST_F(PlanFiles, LatencyBoundIsRecordedAndReadBack) {
  EXPECT_EQ(plan_to_yaml(plan_).find("max_latency_ms"), std::string::npos);
  Plan bounded = plan_;
  bounded.max_latency_ms = 12.5;
  EXPECT_THAT(plan_to_yaml(bounded), HasSubstr("max_latency_ms: 12.5"));
  EXPECT_EQ(plan_from_yaml(plan_to_yaml(bounded), "x"), bounded);
  std::string negative = plan_to_yaml(bounded);
  const auto at = negative.find("max_latency_ms: 12.5");
  ASSERT_NE(at, std::string::npos);
  negative.replace(at, 20, "max_latency_ms: -1");
  EXPECT_THAT(error_of_text(negative), HasSubstr("max_latency_ms"));
}

TEST_F(PlanFiles, RecordsWhatTheIssueAsksFor) {
  const std::string text = testing::read_bytes(dir_.path() / "plan.yaml");
  for (const char* key :
       {"sha256:", "fragments:", "slots:", "edges:", "strategy: experts", "objective: latency",
        "latency_ms:", "throughput_fps:", "output_fix: true",
        "fix_point:", "compute_ms:", "verdict:", "candidates:", "adjustments:"})
    EXPECT_THAT(text, HasSubstr(key));
  EXPECT_EQ(plan_.model_sha256, std::string(64, 'a'));
  EXPECT_GT(plan_.predicted.wire_bytes_per_frame, 0);
}

// A new plan over an earlier one removes the earlier plan's fragments it does not reuse,
// and nothing else: `split -o DIR` once deleted any fragments/*_int.xmodel in DIR.
TEST_F(PlanFiles, RewritingRemovesOnlyWhatTheEarlierPlanWrote) {
  testing::write_bytes(dir_.path() / "fragments" / "someone_elses_int.xmodel", "keep me");
  SplitOptions o;
  o.nodes = 2;
  o.strategy = "pipeline";
  SplitResult r = split_model(testing::fork_join_model({2, 2, 2}), o);
  const Plan rewritten = write_split(r, dir_.path());
  std::set<std::string> kept;
  for (const auto& f : rewritten.fragments) kept.insert(f.file);
  for (const auto& f : plan_.fragments)
    EXPECT_EQ(std::filesystem::exists(dir_.path() / f.file), kept.count(f.file) == 1) << f.file;
  EXPECT_EQ(testing::read_bytes(dir_.path() / "fragments" / "someone_elses_int.xmodel"), "keep me");
  EXPECT_NO_THROW(check_plan_files(read_plan(dir_.path()), dir_.path()));
}

TEST_F(PlanFiles, AForeignNonEmptyFolderIsRefusedAndLeftAlone) {
  ScratchDir foreign;
  std::filesystem::create_directories(foreign / "fragments");
  testing::write_bytes(foreign / "fragments" / "precious_int.xmodel", "precious");
  testing::write_bytes(foreign / "notes.txt", "mine");
  SplitResult r = split_model(testing::fork_join_model({2, 2, 2}), SplitOptions{});
  try {
    write_split(r, foreign.path());
    ADD_FAILURE() << "wrote into a foreign folder";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(foreign.path().string() + ": the folder is not empty"));
  }
  EXPECT_EQ(testing::read_bytes(foreign / "fragments" / "precious_int.xmodel"), "precious");
  EXPECT_FALSE(std::filesystem::exists(foreign / "plan.yaml"));
}

TEST_F(PlanFiles, InconsistentPlansAreRejectedNamingTheFault) {
  const std::string first = plan_.fragments[0].name;
  const std::string second = plan_.fragments[1].name;
  const std::vector<std::pair<std::function<void(Plan&)>, std::string>> cases = {
      {[](Plan& p) { p.fragments[1].file = "fragments/missing_int.xmodel"; }, "is missing"},
      {[](Plan& p) { p.fragments[1].sha256 = std::string(64, '0'); }, "has sha256"},
      {[](Plan& p) { p.edges[1].input = "ghost"; }, "is not an input of"},
      {[](Plan& p) { p.edges[1].output = "ghost"; }, "is not an output of"},
      {[](Plan& p) { p.edges[1].from = "nowhere"; }, "unknown fragment 'nowhere'"},
      {[](Plan& p) { p.fragments[1].inputs[0].shape[1] += 1; }, "shape"},
      {[](Plan& p) { p.fragments[1].inputs[0].fix_point += 1; }, "fix_point"},
      {[](Plan& p) { p.edges.push_back(p.edges[1]); }, "fed twice"},
      {[](Plan& p) { std::swap(p.fragments[0], p.fragments[1]); }, "does not come before"},
      {[](Plan& p) { p.fragments[0].file = "../escape_int.xmodel"; }, "relative path"},
      {[](Plan& p) { p.fragments[0].nodes = {7}; }, "outside"},
      {[](Plan& p) { p.fragments[1].name = p.fragments[0].name; }, "duplicate"},
      {[](Plan& p) { p.edges.erase(p.edges.begin()); }, "fed by no edge"},
      {[](Plan& p) { p.strategy = "magic"; }, "strategy"},
      {[](Plan& p) { p.edges.back().bytes += 1; }, "bytes"},
      {[&](Plan& p) {
         // Another fragment's file, with its hash: its inputs are not the ones recorded.
         p.fragments[1].file = p.fragments[2].file;
         p.fragments[1].sha256 = p.fragments[2].sha256;
       },
       "in the file but"},
  };
  for (const auto& [edit, expected] : cases) {
    const std::string msg = error_after(edit);
    EXPECT_THAT(msg, HasSubstr(expected));
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  (void)first;
  (void)second;
}

// check_plan's message for `plan`, or "" when it passes.
std::string check_error(const Plan& plan) {
  try {
    check_plan(plan);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Frame shares: the cycle spreads each copy's frames evenly; plan.yaml records the shares
// (replicate only) and reads them back; check_plan refuses shares that do not fit.
TEST(FrameShare, CycleRecordAndChecks) {
  EXPECT_EQ(replica_cycle({}), std::vector<std::uint32_t>{});
  EXPECT_EQ(replica_cycle({1, 1, 2}), (std::vector<std::uint32_t>{2, 0, 1, 2}));
  EXPECT_EQ(replica_cycle({1, 1, 1}), (std::vector<std::uint32_t>{0, 1, 2}));
  const auto cycle = replica_cycle({11, 11, 10, 10, 10});
  ASSERT_EQ(cycle.size(), 52u);
  std::vector<int> count(5, 0), last(5, -100);
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    EXPECT_GE(static_cast<int>(i) - last[cycle[i]], 3) << "copy " << cycle[i] << " twice close";
    last[cycle[i]] = static_cast<int>(i);
    ++count[cycle[i]];
  }
  EXPECT_EQ(count, (std::vector<int>{11, 11, 10, 10, 10}));

  ScratchDir dir;
  SplitOptions o;
  o.nodes = 3;
  o.strategy = "replicate";
  SplitResult r = split_model(testing::fork_join_model({2, 2, 2}), o);
  Plan plan = write_split(r, dir.path());
  EXPECT_TRUE(plan.frame_share.empty());  // one kind of board: equal shares, not written
  EXPECT_EQ(plan_to_yaml(plan).find("frame_share"), std::string::npos);
  plan.frame_share = {1, 2, 3};
  const std::string text = plan_to_yaml(plan);
  EXPECT_THAT(text, HasSubstr("frame_share: [1, 2, 3]"));
  EXPECT_EQ(plan_from_yaml(text, "plan.yaml").frame_share, plan.frame_share);
  const std::vector<std::pair<std::vector<int>, std::string>> bad = {
      {{1, 2}, "2 shares for 3 replicas"},
      {{1, 0, 1}, "a share must be 1 to 1024"},
      {{1000, 20, 20}, "add up to more than 1024"}};
  for (const auto& [share, expected] : bad) {
    Plan p = plan;
    p.frame_share = share;
    EXPECT_THAT(check_error(p), HasSubstr(expected));
  }
  Plan other = plan;
  other.strategy = "pipeline";
  EXPECT_THROW(check_plan(other), Error);
}

// A hybrid plan records its inner strategy and replica count (and every candidate's), reads
// back unchanged, and check_plan refuses a malformed one naming the fault: a fragment with
// another number of nodes than replicas, a node in two replicas, a bad inner strategy or
// replica count, hybrid fields on another strategy.
TEST(HybridPlan, IsRecordedAndAMalformedOneIsRefused) {
  ScratchDir dir;
  SplitOptions o;
  o.nodes = 4;
  o.strategy = "hybrid";
  o.replicas = 2;
  SplitResult r = split_model(testing::fork_join_model({2, 2, 2}), o);
  const Plan plan = write_split(r, dir.path());
  ASSERT_EQ(plan.strategy, "hybrid");
  ASSERT_EQ(plan.replicas, 2);
  const std::string text = plan_to_yaml(plan);
  EXPECT_THAT(text,
              HasSubstr("hybrid: {inner_strategy: " + plan.inner_strategy + ", replicas: 2}"));
  EXPECT_THAT(text, HasSubstr("inner_strategy: experts\n    replicas: 2"));
  EXPECT_EQ(read_plan(dir.path()), plan);
  ASSERT_GE(plan.fragments.size(), 2u);
  const std::vector<std::pair<std::function<void(Plan&)>, std::string>> cases = {
      {[](Plan& p) { p.fragments[0].nodes.pop_back(); }, "1 nodes, but the hybrid has 2"},
      {[](Plan& p) {
         p.fragments[1].nodes = {p.fragments[0].nodes[1], p.fragments[0].nodes[0]};
       },
       "is in replica"},
      {[](Plan& p) { p.fragments[0].nodes[1] = p.fragments[0].nodes[0]; }, "is in replica"},
      {[](Plan& p) { p.inner_strategy = "replicate"; }, "hybrid.inner_strategy"},
      {[](Plan& p) { p.replicas = 1; }, "hybrid.replicas"},
      {[](Plan& p) { p.strategy = "experts"; }, "only for the hybrid strategy"},
  };
  for (const auto& [edit, expected] : cases) {
    Plan p = plan;
    edit(p);
    const std::string msg = check_error(p);
    EXPECT_THAT(msg, HasSubstr(expected));
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }

  // Pipelined experts are a hybrid of one replica: recorded as such, and read back.
  o.replicas = 1;
  ScratchDir one;
  SplitResult staged = split_model(testing::fork_join_model({2, 2, 2}), o);
  const Plan pipelined = write_split(staged, one.path());
  ASSERT_EQ(pipelined.inner_strategy, "pipelined-experts");
  EXPECT_THAT(plan_to_yaml(pipelined),
              HasSubstr("hybrid: {inner_strategy: pipelined-experts, replicas: 1}"));
  EXPECT_EQ(read_plan(one.path()), pipelined);
  Plan none = pipelined;
  none.replicas = 0;
  EXPECT_THROW(check_plan(none), Error);
}

// A second fragment renamed to the first's name in plan.yaml (slots left as they were)
// was reported as a slot that does not match; it is a duplicate name.
TEST_F(PlanFiles, DuplicateFragmentNameIsReportedAsSuch) {
  std::string text = plan_to_yaml(plan_);
  const std::string second = "name: " + plan_.fragments[1].name + "\n";
  const auto at = text.find(second);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, second.size(), "name: " + plan_.fragments[0].name + "\n");
  const std::string msg = error_of_text(text);
  EXPECT_THAT(msg, HasSubstr("fragment '" + plan_.fragments[0].name + "': duplicate name"));
  EXPECT_THAT(msg, HasSubstr("plan.yaml"));
}

TEST_F(PlanFiles, BadYamlIsRejectedNamingTheField) {
  const std::string good = plan_to_yaml(plan_);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"version: 1\nmodel: [", "not valid YAML"},
      {replaced("version: 1", "version: 2"), "unsupported version"},
      {replaced("objective: latency", "objectiv: latency"), ": objectiv: unknown key"},
      {replaced("nodes: 3", "nodes: three"), ": nodes: expected an integer"},
      {replaced("output_fix: true", ""), ": output_fix: missing"},
      {"", "plan.yaml: (top): expected a map"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string msg = error_of_text(text);
    EXPECT_THAT(msg, HasSubstr(expected)) << text.substr(0, 40);
    // The one YAML error format: "plan.yaml:LINE:COL: path: message".
    if (!text.empty()) {
      EXPECT_THAT(msg, ::testing::MatchesRegex("plan\\.yaml:[0-9]+:[0-9]+: .*"));
    }
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_THROW(read_plan(dir_.path() / "nope"), Error);
}

TEST_F(PlanFiles, CompiledEntriesAreOptionalAndStrict) {
  Plan with = plan_;
  with.fragments[0].compiled =
      PlanCompiled{"fragments/stem.xmodel", std::string(64, 'b'), 0x101000016010407};
  const std::string text = plan_to_yaml(with);
  EXPECT_THAT(text, HasSubstr("dpu_fingerprint: 0x101000016010407"));
  EXPECT_EQ(plan_from_yaml(text, "x"), with);
  EXPECT_EQ(plan_to_yaml(plan_).find("compiled"), std::string::npos);  // absent: as before
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replaced("0x101000016010407", "0x10100001601040z"),
       "fragments[0].compiled.dpu_fingerprint: value: '0x10100001601040z' is not a DPU "
       "fingerprint"},
      {replaced("0x101000016010407", "0x0"),
       "fragments[0].compiled.dpu_fingerprint: must not be 0"},
      {replaced("dpu_fingerprint:", "fingerprint:"),
       "fragments[0].compiled.fingerprint: unknown key"},
      {replaced("file: fragments/stem.xmodel", "path: x"), "fragments[0].compiled.path"},
  };
  for (const auto& [bad, expected] : cases) {
    const std::string msg = error_of_text(bad);
    EXPECT_THAT(msg, HasSubstr(expected));
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_THAT(
      error_after([](Plan& p) {
        p.fragments[0].compiled = PlanCompiled{"../x.xmodel", std::string(64, 'b'), 1};
      }),
      HasSubstr("compiled file '../x.xmodel' must be a relative path inside the plan folder"));
}

TEST_F(PlanFiles, RunChecksItsInputs) {
  std::vector<QTensor> inputs;
  EXPECT_THROW(run_plan_locally(plan_, dir_.path(), inputs), Error);
  const auto& t = plan_.model_inputs.front();
  inputs.push_back(random_qtensor(t.name, {1, 2}, t.fix_point, 1));
  EXPECT_THROW(run_plan_locally(plan_, dir_.path(), inputs), Error);
  LocalRunOptions bad;
  bad.backend = "no-such-backend";
  inputs = {random_qtensor(t.name, t.shape, t.fix_point, 1)};
  EXPECT_THROW(run_plan_locally(plan_, dir_.path(), inputs, bad), Error);
}

}  // namespace
}  // namespace dpushard
