// `dpushard exec --backend vart` end to end, on the command line built with the vart backend
// over the VART double (dpushard_on_vart_double), against `dpushard exec --backend ref` on the
// `_int` file with the same .npy inputs: the output hashes must be equal. The real compiled
// Versal fixture (the double computing from the `_int` file, or from the compiled ops), the
// KV260 fixture with test weights, and compiled-equivalent fragments with DPU batches 1 and 4,
// a runner that is not a RunnerExt and tensors in reverse order.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "compile_equivalent.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "support/npy_file.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = DPUSHARD_FIXTURE_DIR;
// A folder per test: ctest runs the tests of this file in parallel processes.
fs::path work() {
  return fs::path(DPUSHARD_VART_TEST_WORK) / "cli" /
         ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

// Runs `exec FILE --backend B --input ... --json [extra]` and returns the outputs array.
nlohmann::json exec(const std::string& cli, const std::string& env, const fs::path& file,
                    const std::string& backend, const std::vector<fs::path>& inputs,
                    const std::string& extra = "") {
  std::string command =
      env + " '" + cli + "' exec '" + file.string() + "' --backend " + backend + extra;
  for (const auto& in : inputs) command += " --input '" + in.string() + "'";
  const fs::path out = work() / ("out-" + backend + ".json");
  command += " --json >'" + out.string() + "' 2>'" + (work() / "stderr.txt").string() + "'";
  const int status = std::system(command.c_str());
  std::ifstream err(work() / "stderr.txt");
  std::stringstream text;
  text << err.rdbuf();
  EXPECT_EQ(status, 0) << command << "\n" << text.str();
  std::ifstream in(out);
  return nlohmann::json::parse(in)["outputs"];
}

// vart (double, with `vart_env`) on `compiled` against `exec --backend ref` on `ref_file`
// (with `ref_extra`), with seeded int8 inputs; returns the outputs.
nlohmann::json expect_vart_equals_ref(const fs::path& compiled, const std::string& vart_env,
                                      const fs::path& ref_file, const std::string& ref_extra,
                                      std::uint64_t seed = 1, int divisor = 1) {
  SCOPED_TRACE(compiled.filename().string() + " " + vart_env);
  fs::create_directories(work());
  std::vector<fs::path> inputs;
  for (const QTensor& spec : input_specs(read_xmodel(ref_file))) {
    inputs.push_back(work() / ("input" + std::to_string(seed) + ".npy"));
    QTensor q = random_qtensor(spec.name, spec.shape, spec.fix_point, seed++);
    for (auto& v : q.data) v = static_cast<std::int8_t>(v / divisor);
    testing::write_int8_npy(inputs.back(), q);
  }
  const auto expected = exec(DPUSHARD_CLI, "", ref_file, "ref", inputs, ref_extra);
  const auto actual = exec(DPUSHARD_VART_CLI, vart_env, compiled, "vart", inputs);
  EXPECT_EQ(actual.size(), expected.size());
  for (std::size_t o = 0; o < std::min(actual.size(), expected.size()); ++o) {
    EXPECT_EQ(actual[o]["shape"], expected[o]["shape"]);
    EXPECT_EQ(actual[o]["fix_point"], expected[o]["fix_point"]);
    EXPECT_EQ(actual[o]["sha256"], expected[o]["sha256"]) << "output " << o;
  }
  return actual;
}

// vart (double) on `compiled` against ref on `int_file`, with seeded int8 inputs.
void expect_same_outputs(const fs::path& compiled, const fs::path& int_file,
                         const std::string& settings) {
  SCOPED_TRACE(compiled.filename().string() + " " + settings);
  fs::create_directories(work());
  std::vector<fs::path> inputs;
  std::uint64_t seed = 1;
  for (const QTensor& spec : input_specs(read_xmodel(int_file))) {
    inputs.push_back(work() / ("input" + std::to_string(seed) + ".npy"));
    testing::write_int8_npy(inputs.back(),
                            random_qtensor(spec.name, spec.shape, spec.fix_point, seed++));
  }
  const auto expected = exec(DPUSHARD_CLI, "", int_file, "ref", inputs);
  const auto actual =
      exec(DPUSHARD_VART_CLI, "DPUSHARD_VART_DOUBLE_INT='" + int_file.string() + "' " + settings,
           compiled, "vart", inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t o = 0; o < expected.size(); ++o) {
    EXPECT_EQ(actual[o]["shape"], expected[o]["shape"]);
    EXPECT_EQ(actual[o]["fix_point"], expected[o]["fix_point"]);
    EXPECT_EQ(actual[o]["sha256"], expected[o]["sha256"]) << "output " << o;
  }
}

TEST(VartCli, CompiledVersalFixtureMatchesRef) {
  for (const char* settings : {"", "DPUSHARD_VART_DOUBLE_BATCH=6"})
    expect_same_outputs(kFixtures / "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel",
                        kFixtures / "resnet20_cifar10_int_quantized.xmodel", settings);
}

// Without an `_int` fragment the double computes the DPU subgraph from the compiled file's
// own ops (lower_compiled), here with the weights from the `_int` file (the compiled file
// carries none): still ref's bytes on the `_int` file, and on the compiled file.
TEST(VartCli, CompiledVersalFixtureFromItsOwnOpsMatchesRef) {
  DPUSHARD_REQUIRE_FIXTURES();
  const fs::path compiled = kFixtures / "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel";
  const fs::path int_file = kFixtures / "resnet20_cifar10_int_quantized.xmodel";
  const std::string weights = "DPUSHARD_VART_DOUBLE_WEIGHTS='" + int_file.string() + "' ";
  for (const char* batch : {"", "DPUSHARD_VART_DOUBLE_BATCH=6"}) {
    expect_vart_equals_ref(compiled, weights + batch, int_file, "");
    expect_vart_equals_ref(compiled, weights + batch, compiled,
                           " --weights-from '" + int_file.string() + "'");
  }
}

// The KV260 MobileNetV2 (DPUCZDX8G B4096, 224x224x3 input) on the double against ref on the
// same compiled file. Its weights are packed for the DPU and its `_int` file is not public,
// so both run it with test weights in its const-fix ops (with_test_weights): the ops,
// attributes, tensors and fix points are the real file's, the outputs are not the model's.
TEST(VartCli, Kv260MobileNetV2WithTestWeightsMatchesRef) {
  DPUSHARD_REQUIRE_FIXTURES();
  fs::create_directories(work());
  const Graph kv260 =
      read_xmodel(kFixtures / "mobilenetv2_yawn_compiled_dpuczdx8g_kv260_vai25.xmodel");
  const fs::path file = work() / "mobilenetv2_kv260_test_weights.xmodel";
  write_xmodel(vart_test::with_test_weights(kv260, 5), file);
  // The output is two logits after a global average pool, which random inputs barely move:
  // the second input is the first halved, and the two outputs differ, so a frame that did not
  // reach the computation would show.
  std::vector<std::string> hashes;
  for (const auto& [batch, divisor] :
       {std::pair{"", 1}, std::pair{"DPUSHARD_VART_DOUBLE_BATCH=4", 2}}) {
    // The double computes the DPU's work on this CPU, far slower than the KV260 the budget
    // is modeled on (it overran the 1000 ms floor on a loaded machine): a wide budget.
    const std::string env = std::string("DPUSHARD_VART_BUDGET_FACTOR=100000 ") + batch;
    const auto out = expect_vart_equals_ref(file, env, file, "", 1, divisor);
    hashes.push_back(out.at(0)["sha256"]);
  }
  EXPECT_NE(hashes[0], hashes[1]) << "two inputs gave one output: the comparison says nothing";
}

// The budget factor comes from the environment for a DPU slower than the model (or the
// double); a value that is no factor is one line naming the variable, and nothing runs.
TEST(VartCli, BudgetFactorThatIsNoNumberIsOneLine) {
  DPUSHARD_REQUIRE_FIXTURES();
  fs::create_directories(work());
  const fs::path compiled = kFixtures / "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel";
  const fs::path int_file = kFixtures / "resnet20_cifar10_int_quantized.xmodel";
  const fs::path err = work() / "stderr.txt";
  for (const char* factor : {"fast", "0.5", "1e9"}) {
    const std::string command = std::string("DPUSHARD_VART_BUDGET_FACTOR=") + factor +
                                " DPUSHARD_VART_DOUBLE_WEIGHTS='" + int_file.string() + "' '" +
                                DPUSHARD_VART_CLI + "' exec '" + compiled.string() +
                                "' --backend vart --seed 1 >/dev/null 2>'" + err.string() + "'";
    EXPECT_NE(std::system(command.c_str()), 0) << command;
    std::ifstream in(err);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    EXPECT_NE(text.find("DPUSHARD_VART_BUDGET_FACTOR must be a number"), std::string::npos)
        << factor << ": " << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  }
}

// The DPU process's hidden subcommand is for a vart worker only: by hand (no socket at
// descriptor 3, or no arguments) it refuses in one line and exits 2; it is not in the help.
TEST(VartCli, DpuChildByHandIsOneLine) {
  fs::create_directories(work());
  const fs::path err = work() / "stderr.txt";
  for (const char* args : {"", " --parent 1 --timeout-ms 1000 --fragment 0"}) {
    const std::string command = std::string("'") + DPUSHARD_VART_CLI + "' dpu-child" + args +
                                " 3</dev/null >/dev/null 2>'" + err.string() + "'";
    const int status = std::system(command.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << command;
    EXPECT_EQ(WEXITSTATUS(status), 2) << command;
    std::ifstream in(err);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    EXPECT_EQ(text.rfind("dpushard: error: dpu-child: ", 0), 0u) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  }
  const std::string help =
      std::string("'") + DPUSHARD_VART_CLI + "' --help >'" + (work() / "help.txt").string() + "'";
  ASSERT_EQ(std::system(help.c_str()), 0);
  std::ifstream in(work() / "help.txt");
  std::stringstream buffer;
  buffer << in.rdbuf();
  EXPECT_EQ(buffer.str().find("dpu-child"), std::string::npos);
}

TEST(VartCli, CompiledEquivalentFragmentMatchesRef) {
  GraphBuilder b("two_in_two_out");
  const Value x = b.input("x", {1, 6, 6, 8}, 4);
  const Value y = b.input("y", {1, 6, 6, 8}, 5);
  std::vector<std::int8_t> w(8 * 8);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::int8_t>((i * 29) % 19 - 9);
  Conv2dSpec spec;
  spec.kernel = {1, 1};
  spec.pad = {0, 0, 0, 0};
  spec.nonlinear = Nonlinear::Relu;
  const Value c = b.conv2d("conv", x, b.constant("w", {8, 1, 1, 8}, w, 6), std::nullopt, spec, 3);
  b.add("sum", {c, y}, 2);
  b.relu("act", y, 5);
  const Graph int_graph = b.finish();
  fs::create_directories(work());
  const fs::path int_file = work() / "frag_int.xmodel";
  const fs::path compiled = work() / "frag_compiled.xmodel";
  write_xmodel(int_graph, int_file);
  write_xmodel(vart_test::compile_equivalent(int_graph), compiled);
  for (const char* settings : {"", "DPUSHARD_VART_DOUBLE_BATCH=4",
                               "DPUSHARD_VART_DOUBLE_PLAIN=1 DPUSHARD_VART_DOUBLE_BATCH=4",
                               "DPUSHARD_VART_DOUBLE_REVERSE=1"})
    expect_same_outputs(compiled, int_file, settings);
}

}  // namespace
}  // namespace dpushard
