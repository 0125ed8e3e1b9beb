// `dpushard inspect` on the real fixtures and on bad files, run as a user would: the built
// binary, its exit code, one JSON object on stdout, one error line on stderr.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "support/cli_runner.hpp"
#include "xmodel.pb.h"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using testing::fixture;
using testing::ScratchDir;

using Result = testing::CliResult;
using testing::quoted;
using testing::run_cli;

json inspect_json(const ScratchDir& dir, const std::string& file) {
  const Result r = run_cli(dir, "inspect " + quoted(fixture(file).string()) + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);  // throws (and fails the test) unless stdout is one JSON value
}

TEST(CliInspect, IntFixtureJson) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const json j = inspect_json(dir, testing::kResNetInt);
  EXPECT_EQ(j["file"], fixture(testing::kResNetInt).string());
  EXPECT_EQ(j["name"], "CifarResNet");
  EXPECT_EQ(j["kind"], "int");
  EXPECT_EQ(j["ops"], json({{"const", 47},
                            {"fix", 77},
                            {"conv2d", 21},
                            {"relu", 19},
                            {"add", 9},
                            {"avgpool2d", 1},
                            {"mul", 1},
                            {"reshape", 1},
                            {"matmul", 1},
                            {"stack", 1},
                            {"data", 1}}));
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "CifarResNet__input_0");
  EXPECT_EQ(j["inputs"][0]["shape"], json({1, 32, 32, 3}));
  EXPECT_TRUE(j["inputs"][0]["fix_point"].is_number_integer());
  ASSERT_GE(j["outputs"].size(), 1u);
  for (const auto& output : j["outputs"]) EXPECT_TRUE(output["fix_point"].is_number_integer());
  // ResNet-20 for CIFAR-10: about 0.27M parameters and 41M multiply-accumulates.
  EXPECT_GT(j["params"].get<std::int64_t>(), 250'000);
  EXPECT_LT(j["params"].get<std::int64_t>(), 300'000);
  EXPECT_GT(j["macs"].get<std::int64_t>(), 35'000'000);
  EXPECT_LT(j["macs"].get<std::int64_t>(), 45'000'000);
  EXPECT_EQ(j["weight_bytes"], j["params"]);
  EXPECT_GT(j["activation_bytes"].get<std::int64_t>(), 0);
  EXPECT_FALSE(j.contains("subgraphs"));
}

void expect_compiled(const json& j, const std::string& input_shape_json, std::size_t dpu_children,
                     std::int64_t workload) {
  EXPECT_EQ(j["kind"], "compiled");
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["shape"], json::parse(input_shape_json));
  EXPECT_TRUE(j["inputs"][0]["fix_point"].is_number_integer());
  ASSERT_EQ(j["subgraphs"].size(), 3u);
  EXPECT_EQ(j["subgraphs"][0]["device"], "USER");
  EXPECT_EQ(j["subgraphs"][1]["device"], "DPU");
  EXPECT_EQ(j["subgraphs"][1]["children"], dpu_children);
  EXPECT_EQ(j["subgraphs"][1]["workload"], workload);
  EXPECT_EQ(j["subgraphs"][2]["device"], "CPU");
  EXPECT_EQ(j["workload"], workload);
  EXPECT_GT(j["params"].get<std::int64_t>(), 0);
}

TEST(CliInspect, Vck190FixtureJson) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const json j = inspect_json(dir, testing::kResNetVck190);
  expect_compiled(j, "[1,32,32,3]", 26, 82007306);
  EXPECT_EQ(j["name"], "CifarResNet");
  EXPECT_EQ(j["ops"]["data-fix"], 1);
}

TEST(CliInspect, Kv260FixtureJson) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const json j = inspect_json(dir, testing::kMobileNetKv260);
  expect_compiled(j, "[1,224,224,3]", 39, 606167266);
  EXPECT_EQ(j["ops"], json({{"const-fix", 106},
                            {"conv2d-fix", 36},
                            {"depthwise-conv2d-fix", 17},
                            {"eltwise-fix", 10},
                            {"pool-fix", 1},
                            {"reshape-fix", 1},
                            {"data-fix", 1},
                            {"upload", 1},
                            {"download", 1},
                            {"fix2float", 1}}));
}

TEST(CliInspect, HumanSummaryOnStdout) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const Result r = run_cli(dir, "inspect " + quoted(fixture(testing::kMobileNetKv260).string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("compiled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1,224,224,3]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DPU"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("39 children"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

void expect_one_line_error(const Result& r, const std::string& path, const std::string& what) {
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("dpushard: error: " + path + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // exactly one line
}

TEST(CliInspect, CorruptFileFailsWithOneLine) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const std::string bytes = testing::read_bytes(fixture(testing::kResNetInt));
  const auto cut = dir / "cut.xmodel";
  testing::write_bytes(cut, bytes.substr(0, bytes.size() / 3));
  expect_one_line_error(run_cli(dir, "inspect --json " + quoted(cut.string())), cut.string(),
                        "truncated");
  const auto text = dir / "readme.xmodel";
  testing::write_bytes(text, "just some text\n");
  expect_one_line_error(run_cli(dir, "inspect " + quoted(text.string())), text.string(),
                        "not an xmodel");
  const auto missing = dir / "missing.xmodel";
  expect_one_line_error(run_cli(dir, "inspect --json " + quoted(missing.string())),
                        missing.string(), "no such file");
}

// input [1, 6, 6, 3] -> conv + relu -> fix: a valid `_int` graph to damage.
Graph small_int_graph() {
  GraphBuilder b("small");
  const Value x = b.input("x", {1, 6, 6, 3}, 4);
  const QTensor wq = random_qtensor("w", {4, 3, 3, 3}, 0, 1);
  const Value w = b.constant("w", {4, 3, 3, 3}, wq.data, 7);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::Relu;
  b.conv2d("conv", x, w, std::nullopt, spec, 3);
  return b.finish();
}

Op& first_op_of_type(Graph& graph, const std::string& type) {
  for (Op& op : graph.mutable_ops())
    if (op.type == type) return op;
  throw std::runtime_error("no " + type + " op");
}

// inspect and predict once accepted what exec and split refuse: every command now runs the
// same check on the model it loads and names the file and the op.
TEST(CliLoad, EveryCommandRefusesCyclicUnknownOrMisshapenModels) {
  ScratchDir dir;
  std::vector<std::pair<std::string, std::string>> cases;  // file, what the error says
  {
    // The writer refuses a cycle (it writes producers first), so the cycle is made in the
    // serialized file: conv reads the fix op that reads it.
    Graph g = small_int_graph();
    const std::string conv = first_op_of_type(g, "conv2d").name;
    const std::string last = g.ops().back().name;
    ASSERT_NE(last, conv);
    xmodel::pb::Graph file;
    ASSERT_TRUE(file.ParseFromString(serialize_xmodel(g)));
    bool rewired = false;
    for (auto& node : *file.mutable_op_node()) {
      if (node.op_name() != conv) continue;
      ASSERT_GT(node.args_size(), 0);
      ASSERT_GT(node.args(0).arg_ops_size(), 0);
      node.mutable_args(0)->set_arg_ops(0, last);
      rewired = true;
    }
    ASSERT_TRUE(rewired);
    testing::write_bytes(dir / "cyclic.xmodel", file.SerializeAsString());
    cases.emplace_back("cyclic.xmodel", "cycle");
  }
  {
    Graph g = small_int_graph();
    first_op_of_type(g, "conv2d").type = "frobnicate";
    testing::write_bytes(dir / "unknown.xmodel", serialize_xmodel(g));
    cases.emplace_back("unknown.xmodel", "unknown op type");
  }
  {
    Graph g = small_int_graph();
    first_op_of_type(g, "data").attrs["shape"] = std::vector<std::int32_t>{1, 5, 5, 3};
    testing::write_bytes(dir / "misshapen.xmodel", serialize_xmodel(g));
    cases.emplace_back("misshapen.xmodel", "differs from inferred");
  }
  for (const auto& [name, what] : cases) {
    const std::string file = (dir / name).string();
    const std::vector<std::string> commands = {
        "inspect", "inspect --json", "predict", "exec",
        "split --nodes 2 -o " + quoted((dir / "plan").string())};
    for (const std::string& command : commands) {
      SCOPED_TRACE(command + " " + name);
      const Result r = run_cli(dir, command + " " + quoted(file));
      EXPECT_EQ(r.exit_code, 1);
      EXPECT_EQ(r.err.rfind("dpushard: error: " + file + ": ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    }
  }
}

}  // namespace
}  // namespace dpushard
