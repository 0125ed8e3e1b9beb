// `dpushard oracle learn` and `oracle diff` (docs/splitting.md, "Learning and comparing
// oracles"): verdicts read from compiled files, on the real compiled fixtures
// (../shared/fixtures/xmodel) and on compiled files DERIVED from the Versal ResNet-20 by
// editing it with dpushard's own xmodel writer: one derived file for each verdict kind and
// each reason an op leaves the DPU. Tests named Derived* use derived files; Real* the
// fixtures as they are.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dpushard/base/sha256.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/split/oracle_learn.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/micro.hpp"
#include "support/cli_runner.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::fixture;
using testing::kMobileNetKv260;
using testing::kResNetInt;
using testing::kResNetVck190;
using testing::quoted;
using testing::run_cli;
using testing::ScratchDir;

// Op names of the Versal ResNet-20 (SOURCES.md: input USER, one DPU subgraph, fc CPU).
const char* const kConv1 = "CifarResNet__CifarResNet_Conv2d_conv1__ret_3";
const char* const kFc = "CifarResNet__CifarResNet_Linear_fc__ret(TransferMatMulToConv2d)";
const char* const kFcReshape =
    "CifarResNet__CifarResNet_Linear_fc__ret(TransferMatMulToConv2d)_inserted_fix_1_reshaped";
const char* const kFcDownload =
    "CifarResNet__CifarResNet_Linear_fc__ret(TransferMatMulToConv2d)_inserted_fix_1_reshaped_"
    "download_0";
const char* const kOutput = "CifarResNet__CifarResNet_Linear_fc__ret_fix_";  // fix2float

bool erase_from_tree(Subgraph& s, const std::string& op) {
  auto it = std::find(s.ops.begin(), s.ops.end(), op);
  if (it != s.ops.end()) {
    s.ops.erase(it);
    return true;
  }
  for (auto& c : s.children)
    if (erase_from_tree(c, op)) {
      if (c.ops.empty() && c.children.empty())
        s.children.erase(s.children.begin() + (&c - s.children.data()));
      return true;
    }
  return false;
}

Subgraph& child_on(Graph& g, const std::string& device) {
  for (auto& c : g.root()->children)
    if (c.device() == device) return c;
  throw Error("no " + device + " subgraph");
}

// Moves `op` out of its subgraph into a new CPU child of the root.
void move_to_cpu(Graph& g, const std::string& op) {
  ASSERT_TRUE(erase_from_tree(*g.root(), op)) << op;
  Subgraph s;
  s.name = "subgraph_" + op + "_cpu";
  s.ops = {op};
  s.attrs["device"] = std::string("CPU");
  g.root()->children.push_back(s);
}

void add_to_cpu(Graph& g, Op op, const std::string& input) {
  op.args = {{"input", {input}}};
  child_on(g, "CPU").ops.push_back(op.name);
  g.add_op(std::move(op));
}

Op float_op(const std::string& name, const std::string& type, std::vector<std::int64_t> shape) {
  Op op;
  op.name = name;
  op.type = type;
  op.output.name = name;
  op.output.shape = std::move(shape);
  op.output.data_type = DataType::Float;
  op.output.bit_width = 32;
  return op;
}

// Writes the edited graph with the project's writer and reads the file back, so every
// derived case is a real file on disk.
Graph derive(const ScratchDir& dir, const std::string& name, const Graph& edited) {
  const auto path = dir / (name + ".xmodel");
  write_xmodel(edited, path);
  return read_xmodel(path);
}

CompiledVerdict judge(const Graph& g) { return judge_compiled(g, Oracle::builtin(), "test"); }

const CompiledFinding* finding(const CompiledVerdict& v, const std::string& rule) {
  for (const auto& f : v.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

// The derived files of the tests below, by micro-model name (for the CLI tests).
std::map<std::string, Graph> derived_set() {
  std::map<std::string, Graph> out;
  const Graph base = read_xmodel(fixture(kResNetVck190));
  {  // a CPU op type: softmax on the fixed output (fix2float -> softmax -> float2fix)
    Graph g = base;
    add_to_cpu(g, float_op("softmax", "softmax", {1, 10}), kOutput);
    Op fix = float_op("softmax_fix", "float2fix", {1, 10});
    fix.output.data_type = DataType::XInt;
    fix.output.bit_width = 8;
    add_to_cpu(g, fix, "softmax");
    out["softmax_fix"] = g;
  }
  {  // dpu: conv1 with a 16x16 kernel (at the limit), left on the DPU
    Graph g = base;
    g.find(kConv1)->attrs["kernel"] = std::vector<std::int32_t>{16, 16};
    out["conv_k16_fix"] = g;
  }
  {  // a limit: conv1 with a 17x17 kernel, in a CPU subgraph
    Graph g = base;
    g.find(kConv1)->attrs["kernel"] = std::vector<std::int32_t>{17, 17};
    move_to_cpu(g, kConv1);
    out["conv_k17_fix"] = g;
  }
  {  // output_not_fixed: the fc becomes a float conv2d that ends the graph on the CPU
    Graph g = base;
    for (const char* op : {kOutput, kFcDownload, kFcReshape}) {
      erase_from_tree(*g.root(), op);
      g.remove_op(op);
    }
    Op& fc = *g.find(kFc);
    fc.type = "conv2d";
    fc.output.data_type = DataType::Float;
    fc.output.bit_width = 32;
    fc.output.attrs.erase("fix_point");
    move_to_cpu(g, kFc);
    out["conv3x3_nofix"] = g;
  }
  {  // an op type the oracle does not list
    Graph g = base;
    g.find(kConv1)->type = "correlation-fix";
    move_to_cpu(g, kConv1);
    out["gelu_fix"] = g;
  }
  {  // unexplained: conv1 on the CPU although every limit admits it
    Graph g = base;
    move_to_cpu(g, kConv1);
    out["conv3x3_fix"] = g;
  }
  {  // several DPU subgraphs: the DPU subgraph cut in two
    Graph g = base;
    Subgraph& dpu = child_on(g, "DPU");
    Subgraph second = dpu;
    second.name += "_part2";
    const auto half = static_cast<std::ptrdiff_t>(dpu.children.size() / 2);
    second.children.erase(second.children.begin(), second.children.begin() + half);
    dpu.children.erase(dpu.children.begin() + half, dpu.children.end());
    g.root()->children.push_back(second);
    out["conv_relu_fix"] = g;
  }
  {  // data movement: the fc's reshape on the CPU
    Graph g = base;
    move_to_cpu(g, kFcReshape);
    out["reshape_nofix"] = g;
  }
  {  // output_consumed_inside: conv1's value leaves the DPU (a fix2float on the CPU) and
     // feeds the next conv inside it
    Graph g = base;
    Op out_op = float_op("conv1_out", "fix2float", g.op(kConv1).output.shape);
    add_to_cpu(g, out_op, kConv1);
    out["fork_output_fix"] = g;
  }
  return out;
}

TEST(OracleLearnReal, CompiledFixturesAreDpu) {
  DPUSHARD_REQUIRE_FIXTURES();
  for (const char* name : {kResNetVck190, kMobileNetKv260}) {
    const CompiledVerdict v = judge(read_xmodel(fixture(name)));
    EXPECT_EQ(v.verdict, Verdict::Dpu) << name;
    EXPECT_EQ(v.dpu_subgraphs, 1) << name;
    EXPECT_EQ(v.cpu_subgraphs, 0) << name << ": the CPU subgraph holds only fix2float";
    EXPECT_TRUE(v.findings.empty()) << name << ": " << v.findings.front().reason;
  }
}

TEST(OracleLearnReal, IntFileIsRefused) {
  DPUSHARD_REQUIRE_FIXTURES();
  try {
    judge_compiled(read_xmodel(fixture(kResNetInt)), Oracle::builtin(), "r_int.xmodel");
    FAIL() << "an _int file was judged";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("r_int.xmodel: not a compiled xmodel"), std::string::npos)
        << e.what();
  }
}

struct DerivedCase {
  const char* file;  // key in derived_set()
  Verdict verdict;
  const char* rule;  // the finding that decides
  const char* op;    // its op ("" for a whole-file finding)
};

void PrintTo(const DerivedCase& c, std::ostream* os) { *os << c.file << " (derived)"; }

class OracleLearnDerived : public ::testing::TestWithParam<DerivedCase> {};

TEST_P(OracleLearnDerived, VerdictAndReason) {
  DPUSHARD_REQUIRE_FIXTURES();
  const DerivedCase& c = GetParam();
  ScratchDir dir;
  const Graph g = derive(dir, c.file, derived_set().at(c.file));
  const CompiledVerdict v = judge(g);
  EXPECT_EQ(verdict_name(v.verdict), verdict_name(c.verdict));
  if (std::string(c.rule).empty()) {
    EXPECT_TRUE(v.findings.empty()) << v.findings.front().reason;
    return;
  }
  const CompiledFinding* f = finding(v, c.rule);
  ASSERT_NE(f, nullptr) << "no finding " << c.rule;
  EXPECT_EQ(f->op, c.op);
  EXPECT_FALSE(f->reason.empty());
  // Only the edit shows: no other op left the DPU.
  for (const auto& other : v.findings)
    if (other.verdict == Verdict::Cpu) {
      EXPECT_EQ(other.op, c.op) << other.reason;
    }
}

// dpu, each reason an op leaves the DPU (cpu), then each boundary cost (dpu+boundary); all
// on derived files.
INSTANTIATE_TEST_SUITE_P(
    Derived, OracleLearnDerived,
    ::testing::Values(
        DerivedCase{"conv_k16_fix", Verdict::Dpu, "", ""},
        DerivedCase{"softmax_fix", Verdict::Cpu, "softmax", "softmax"},
        DerivedCase{"conv_k17_fix", Verdict::Cpu, "conv2d.kernel", kConv1},
        DerivedCase{"conv3x3_nofix", Verdict::Cpu, "output_not_fixed", kFc},
        DerivedCase{"gelu_fix", Verdict::Cpu, "unknown_ops", kConv1},
        DerivedCase{"conv3x3_fix", Verdict::Cpu, "unexplained", kConv1},
        DerivedCase{"conv_relu_fix", Verdict::DpuBoundary, "several_dpu_subgraphs", ""},
        DerivedCase{"reshape_nofix", Verdict::DpuBoundary, "data_movement", kFcReshape},
        DerivedCase{"fork_output_fix", Verdict::DpuBoundary, "output_consumed_inside", kConv1}),
    [](const auto& test) { return std::string(test.param.file); });

TEST(OracleLearnDerived, LearnedYamlIsAnOracleWithTheVerdicts) {
  DPUSHARD_REQUIRE_FIXTURES();
  std::map<std::string, CompiledVerdict> verdicts;
  for (const auto& [name, g] : derived_set()) verdicts[name] = judge(g);
  LearnProvenance p{"3.5", "abc123", "0x101000016010407", "compiled/"};
  const std::string text = learned_oracle_yaml(Oracle::builtin(), verdicts, p);
  const Oracle learned = Oracle::parse(text, "learned.yaml");
  ASSERT_EQ(learned.expectations().size(), verdicts.size());
  for (const auto& [name, v] : verdicts) EXPECT_EQ(learned.expected(name), v.verdict) << name;
  EXPECT_EQ(learned.provenance().at("vitis_ai"), "3.5");
  EXPECT_EQ(learned.provenance().at("arch_fingerprint"), "0x101000016010407");
  EXPECT_NE(text.find("softmax_fix: cpu  # left the DPU: softmax 'softmax' (softmax)"),
            std::string::npos)
      << text;
  // The rules are the base oracle's: only verdicts and provenance differ.
  for (const auto& line : diff_oracles(Oracle::builtin(), learned))
    EXPECT_TRUE(line.rfind("micro_models.", 0) == 0 || line.rfind("learned_from.", 0) == 0) << line;
}

// Two oracles that differ in known ways: the builtin one and an edited copy.
TEST(OracleDiff, ListsEachChangeOnce) {
  std::string text = Oracle::builtin().text();
  auto replace = [&](const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  replace("unknown_ops: CPU", "unknown_ops: DPU");
  replace("kernel: [1, 16]", "kernel: [1, 15]");  // the first one is conv2d's
  replace("softmax: {device: CPU", "softmax: {device: DPU");
  replace("alpha: [0.1]", "alpha: [0.1, 0.2]");
  replace("  gelu_fix: cpu\n", "");
  replace("conv_k17_fix: cpu", "conv_k17_fix: dpu");
  replace("\nops:\n", "\nops:\n  erf: {device: CPU}\n");
  const Oracle b = Oracle::parse(text, "b.yaml");
  const std::vector<std::string> expected = {
      "unknown_ops: CPU -> DPU",
      "ops.conv2d.limits.kernel: [1, 16] -> [1, 15]",
      "ops.leaky-relu.limits.alpha: [0.1] -> [0.1, 0.2]",
      "ops.softmax.device: CPU -> DPU",
      "ops.erf: (not listed) -> CPU",
      "micro_models.conv_k17_fix: cpu -> dpu",
      "micro_models.gelu_fix: cpu -> (not listed)",
  };
  EXPECT_EQ(diff_oracles(Oracle::builtin(), b), expected);
  EXPECT_TRUE(diff_oracles(b, b).empty());
  EXPECT_TRUE(diff_oracles(Oracle::builtin(), Oracle::builtin()).empty());
}

// The command line: learn over a folder of derived files, diff's exit codes, bad input.
class OracleCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::missing_fixtures().empty()) return;
    std::filesystem::create_directories(dir_ / "compiled");
    for (const auto& [name, g] : derived_set())
      write_xmodel(g, dir_ / "compiled" / (name + ".xmodel"));
    std::filesystem::copy_file(fixture(kMobileNetKv260),
                               dir_ / "compiled" / "depthwise3x3_fix.xmodel");
    testing::write_bytes(dir_ / "arch.json", R"({"target": "DPUCZDX8G_ISA1_B4096", )"
                                             R"("fingerprint": "0x101000016010407"})");
  }
  ScratchDir dir_;
};

TEST_F(OracleCli, LearnWritesAnOracleTheSplitterReads) {
  DPUSHARD_REQUIRE_FIXTURES();
  const auto out = dir_ / "learned.yaml";
  const auto r = run_cli(dir_, "oracle learn " + quoted((dir_ / "compiled").string()) + " -o " +
                                   quoted(out.string()) + " --vitis-ai-version 3.5 --arch-json " +
                                   quoted((dir_ / "arch.json").string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["learned"], 10);
  EXPECT_EQ(j["missing"].size(), micro_models().size() - 10);
  const Oracle learned = Oracle::load(out);
  EXPECT_EQ(learned.expected("depthwise3x3_fix"), Verdict::Dpu);  // the real KV260 file
  EXPECT_EQ(learned.expected("conv3x3_fix"), Verdict::Cpu);       // derived: unexplained
  EXPECT_EQ(learned.expected("reshape_nofix"), Verdict::DpuBoundary);
  EXPECT_EQ(learned.provenance().at("arch_fingerprint"), "0x101000016010407");
  EXPECT_EQ(learned.provenance().at("arch_json_sha256"), sha256_file(dir_ / "arch.json"));
  EXPECT_NE(r.err.find("dpushard: warning: "), std::string::npos);

  // diff: 0 equal, 1 different (one line per change on stdout), 2 unreadable.
  auto d = run_cli(dir_, "oracle diff " + quoted(out.string()) + " " + quoted(out.string()));
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, "");
  d = run_cli(dir_, "oracle diff builtin " + quoted(out.string()));
  EXPECT_EQ(d.exit_code, 1) << d.err;
  EXPECT_NE(d.out.find("micro_models.conv3x3_fix: dpu -> cpu\n"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("learned_from.vitis_ai: (not listed) -> 3.5\n"), std::string::npos);
  d = run_cli(dir_, "oracle diff builtin " + quoted((dir_ / "none.yaml").string()));
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_EQ(d.err.rfind("dpushard: error: ", 0), 0u) << d.err;
}

// Each bad input: one line `dpushard: error: ...`, non-zero exit, the output untouched.
TEST_F(OracleCli, BadInputIsOneLineAndWritesNothing) {
  DPUSHARD_REQUIRE_FIXTURES();
  const auto out = dir_ / "learned.yaml";
  testing::write_bytes(out, "previous\n");
  auto learn = [&](const std::filesystem::path& folder) {
    return run_cli(dir_, "oracle learn " + quoted(folder.string()) + " -o " + quoted(out.string()));
  };
  auto expect_error = [&](const testing::CliResult& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 1) << what;
    EXPECT_EQ(r.err.rfind("dpushard: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(testing::read_bytes(out), "previous\n");
  };
  expect_error(learn(dir_ / "missing"), "no such folder");
  expect_error(learn(dir_ / "arch.json"), "not a folder");
  std::filesystem::create_directories(dir_ / "empty");
  expect_error(learn(dir_ / "empty"), "no .xmodel files");

  const auto bad = dir_ / "bad";
  auto fresh = [&] {
    std::filesystem::remove_all(bad);
    std::filesystem::create_directories(bad);
    std::filesystem::copy_file(fixture(kResNetVck190), bad / "conv3x3_fix.xmodel");
  };
  fresh();
  std::filesystem::copy_file(fixture(kResNetInt), bad / "add_fix.xmodel");
  expect_error(learn(bad), "add_fix.xmodel: not a compiled xmodel");
  fresh();
  testing::write_bytes(bad / "add_fix.xmodel", "name: not an xmodel\n");
  expect_error(learn(bad), "add_fix.xmodel: not an xmodel");
  fresh();
  std::filesystem::create_directories(bad / "add_fix.xmodel");  // unreadable as a file
  expect_error(learn(bad), "add_fix.xmodel: is a directory");
  fresh();
  std::filesystem::copy_file(fixture(kResNetVck190), bad / "resnet20.xmodel");
  expect_error(learn(bad), "'resnet20' is not a micro-model");
}

}  // namespace
}  // namespace dpushard
