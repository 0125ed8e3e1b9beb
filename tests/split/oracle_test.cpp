// The compiler oracle: the shipped file, its verdict on every micro-model, other oracle
// files, and bad ones.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/split/oracle.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/micro.hpp"
#include "split/split_helpers.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;

TEST(Oracle, BuiltinParsesAndNamesItself) {
  const Oracle& o = Oracle::builtin();
  EXPECT_EQ(o.name(), "kv260-dpuczdx8g");
  EXPECT_EQ(o.origin(), "builtin");
  EXPECT_THAT(o.text(), HasSubstr("micro_models:"));
}

TEST(Oracle, SuiteHasAtLeast28ModelsAllListedWithAnExpectation) {
  const auto& models = micro_models();
  EXPECT_GE(models.size(), 28u);
  for (const auto& m : models)
    EXPECT_TRUE(Oracle::builtin().expected(m.name).has_value())
        << m.name << " is not in the oracle";
  for (const auto& [name, verdict] : Oracle::builtin().expectations()) {
    bool known = false;
    for (const auto& m : models) known = known || m.name == name;
    EXPECT_TRUE(known) << "the oracle lists '" << name << "', which is no micro-model";
  }
}

// The oracle's rules, applied to each micro-model, give the outcome it lists for it.
TEST(Oracle, VerdictOnEveryMicroModelIsTheListedOne) {
  int per_verdict[3] = {0, 0, 0};
  for (const auto& m : micro_models()) {
    const Graph g = make_micro_model(m.name);
    const FragmentVerdict v = Oracle::builtin().judge(g);
    EXPECT_EQ(verdict_name(v.verdict), verdict_name(*Oracle::builtin().expected(m.name))) << m.name;
    ++per_verdict[static_cast<int>(v.verdict)];
    if (v.verdict == Verdict::Dpu) {
      EXPECT_TRUE(v.findings.empty()) << m.name;
      EXPECT_EQ(v.dpu_subgraphs, 1) << m.name;
    } else {
      EXPECT_FALSE(v.findings.empty()) << m.name << " has no reason for its verdict";
      for (const auto& f : v.findings) EXPECT_EQ(f.reason.find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(per_verdict[0], 0);
  EXPECT_GT(per_verdict[1], 0);
  EXPECT_GT(per_verdict[2], 0);
}

TEST(Oracle, ReasonsNameTheRuleAndTheLimit) {
  const auto k17 = Oracle::builtin().judge(make_micro_model("conv_k17_fix"));
  ASSERT_FALSE(k17.findings.empty());
  EXPECT_EQ(k17.findings.front().rule, "conv2d.kernel");
  EXPECT_THAT(k17.findings.front().reason, HasSubstr("17x17 is beyond 1-16"));
  const auto nofix = Oracle::builtin().judge(make_micro_model("conv_relu_nofix"));
  ASSERT_FALSE(nofix.findings.empty());
  EXPECT_EQ(nofix.findings.front().rule, "output_not_fixed");
  EXPECT_EQ(nofix.placements.at("conv").device, Device::Cpu);
  const auto budget = Oracle::builtin().judge(make_micro_model("conv_budget2304_fix"));
  EXPECT_THAT(budget.findings.front().reason, HasSubstr("2304 is above 2048"));
  const auto fork = Oracle::builtin().judge(make_micro_model("fork_output_fix"));
  EXPECT_EQ(fork.findings.front().rule, "output_consumed_inside");
  EXPECT_THAT(fork.findings.front().reason, HasSubstr("output_ops"));
}

TEST(Oracle, MicroModelsAreValidSmallAndTheFixedOnesRun) {
  testing::ScratchDir dir;
  for (const auto& m : micro_models()) {
    const Graph g = make_micro_model(m.name);
    EXPECT_NO_THROW(validate(g)) << m.name;
    const auto path = dir / (m.name + "_int.xmodel");
    write_xmodel(g, path);
    EXPECT_LT(std::filesystem::file_size(path), 200'000u) << m.name;
    bool fixed_outputs = true;
    for (const Op* o : g.outputs()) fixed_outputs = fixed_outputs && fix_point_of(g, o->name);
    if (!fixed_outputs) continue;
    EXPECT_NO_THROW(testing::run_whole(g, 1)) << m.name;
  }
  EXPECT_THROW(make_micro_model("no_such_model"), Error);
}

TEST(Oracle, AnotherOracleFileChangesThePlacement) {
  std::string text = Oracle::builtin().text();
  const std::string from =
      "      kernel: [1, 16]\n      stride: [1, 8]\n      kernel_channel_budget";
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, from.size(),
               "      kernel: [1, 1]\n      stride: [1, 8]\n      kernel_channel_budget");
  const Oracle strict = Oracle::parse(text, "strict.yaml");
  EXPECT_EQ(strict.judge(make_micro_model("conv3x3_fix")).verdict, Verdict::Cpu);
  EXPECT_EQ(Oracle::builtin().judge(make_micro_model("conv3x3_fix")).verdict, Verdict::Dpu);
  testing::ScratchDir dir;
  testing::write_bytes(dir / "o.yaml", text);
  EXPECT_EQ(Oracle::load(dir / "o.yaml").origin(), (dir / "o.yaml").string());
}

TEST(Oracle, BadFilesAreOneLineErrorsNamingTheField) {
  const std::string base = Oracle::builtin().text();
  auto error_of = [](const std::string& text) {
    try {
      Oracle::parse(text, "bad.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replaced("unknown_ops: CPU", "unknown_ops: GPU"), "unknown_ops"},
      {replaced("  softmax: {device: CPU", "  softmax: {devise: CPU"), "ops.softmax.devise"},
      {replaced("      alpha: [0.1]", "      slope: [0.1]"), "ops.leaky-relu.limits.slope"},
      {replaced("  conv3x3_fix: dpu", "  conv3x3_fix: gpu"), "micro_models.conv3x3_fix"},
      {replaced("name: kv260-dpuczdx8g", "nam: x"), "nam"},
      {replaced("      kernel: [1, 16]", "      kernel: [16, 1]"), "ops.conv2d.limits.kernel"},
      {"ops: [unclosed", "bad.yaml:1:1: not valid YAML"},
      {"name: x\nops: {}\n", "ops"},
  };
  for (const auto& [text, field] : cases) {
    const std::string msg = error_of(text);
    EXPECT_THAT(msg, HasSubstr("bad.yaml")) << field;
    // The one YAML error format: "bad.yaml:LINE:COL: field...: message".
    EXPECT_THAT(msg, ::testing::MatchesRegex("bad\\.yaml:[0-9]+:[0-9]+: .*")) << field;
    EXPECT_THAT(msg, HasSubstr(field));
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_THROW(Oracle::load("/nonexistent/oracle.yaml"), Error);
}

}  // namespace
}  // namespace dpushard
