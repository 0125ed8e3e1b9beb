// `dpushard exec` run as a user would: the built binary on the real ResNet-20 fixture, its
// exit code, one JSON object on stdout, one error line on stderr for bad input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "support/cli_runner.hpp"
#include "support/float_cpu_tail.hpp"
#include "support/npy_file.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using testing::fixture;
using ::testing::HasSubstr;
using testing::ScratchDir;

using Result = testing::CliResult;
using testing::npy_file;
using testing::quoted;
using testing::run_cli;

std::string resnet() { return quoted(fixture(testing::kResNetInt).string()); }

json exec_json(const ScratchDir& dir, const std::string& args) {
  const Result r = run_cli(dir, "exec " + resnet() + " --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);  // throws (and fails the test) unless stdout is one JSON value
}

TEST(CliExec, ResNet20JsonIsCompleteAndStable) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const json a = exec_json(dir, "--seed 3 --repeat 3");
  EXPECT_EQ(a["file"], fixture(testing::kResNetInt).string());
  EXPECT_EQ(a["backend"], "ref");
  EXPECT_EQ(a["threads"], 1);
  EXPECT_EQ(a["repeat"], 3);
  EXPECT_EQ(a["frames"], 3);
  ASSERT_EQ(a["inputs"].size(), 1u);
  EXPECT_EQ(a["inputs"][0]["name"], "CifarResNet__input_0_fix");
  EXPECT_EQ(a["inputs"][0]["shape"], json({1, 32, 32, 3}));
  EXPECT_EQ(a["inputs"][0]["fix_point"], 5);
  ASSERT_EQ(a["outputs"].size(), 1u);
  const json& out = a["outputs"][0];
  EXPECT_EQ(out["shape"], json({1, 10}));
  EXPECT_EQ(out["fix_point"], 2);
  EXPECT_EQ(out["sha256"].get<std::string>().size(), 64u);
  ASSERT_EQ(out["top5"].size(), 5u);
  for (std::size_t i = 1; i < 5; ++i)
    EXPECT_GE(out["top5"][i - 1]["value"].get<double>(), out["top5"][i]["value"].get<double>());
  const auto& latency = a["latency_ms"];
  EXPECT_LE(latency["min"].get<double>(), latency["median"].get<double>());
  EXPECT_LE(latency["median"].get<double>(), latency["max"].get<double>());

  // The input is random_qtensor(name, shape, fp, seed): its hash is reproducible here.
  EXPECT_EQ(a["inputs"][0]["sha256"],
            sha256_hex(random_qtensor("CifarResNet__input_0_fix", {1, 32, 32, 3}, 5, 3).data));
  const json b = exec_json(dir, "--seed 3");
  EXPECT_EQ(b["outputs"][0]["sha256"], out["sha256"]);
  EXPECT_EQ(b["inputs"][0]["sha256"], a["inputs"][0]["sha256"]);
  const json c = exec_json(dir, "--seed 4");
  EXPECT_NE(c["inputs"][0]["sha256"], a["inputs"][0]["sha256"]);
}

TEST(CliExec, HumanOutputGoesToStderr) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const Result r = run_cli(dir, "exec " + resnet());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_THAT(r.err, AllOf(HasSubstr("on ref"), HasSubstr("top5"), HasSubstr("sha256")));
}

TEST(CliExec, NpyInputsInt8AndFloat32) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const QTensor q = random_qtensor("CifarResNet__input_0_fix", {1, 32, 32, 3}, 5, 11);
  const std::string shape = "(1, 32, 32, 3)";
  testing::write_int8_npy(dir / "x8.npy", q);
  // The same values as float32 q * 2^-5: quantizing them gives q back exactly.
  std::string floats;
  for (auto v : q.data) {
    const float f = static_cast<float>(v) / 32.0f;
    char raw[4];
    std::memcpy(raw, &f, 4);
    floats.append(raw, 4);
  }
  testing::write_bytes(dir / "xf.npy", npy_file("<f4", shape, floats));
  const json a = exec_json(dir, "--input " + quoted((dir / "x8.npy").string()));
  const json b = exec_json(dir, "--input " + quoted((dir / "xf.npy").string()));
  EXPECT_EQ(a["inputs"][0]["sha256"], sha256_hex(q.data));
  EXPECT_EQ(b["inputs"][0]["sha256"], sha256_hex(q.data));
  EXPECT_EQ(a["outputs"][0]["sha256"], b["outputs"][0]["sha256"]);
}

TEST(CliExec, BadNpyIsOneLineNamingTheFile) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const auto check = [&](const std::string& name, const std::string& bytes,
                         const std::string& problem) {
    testing::write_bytes(dir / name, bytes);
    const Result r = run_cli(dir, "exec " + resnet() + " --input " + quoted((dir / name).string()));
    EXPECT_EQ(r.exit_code, 1) << name;
    EXPECT_THAT(r.err, AllOf(HasSubstr(name), HasSubstr(problem)));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty());
  };
  check("garbage.npy", "this is not numpy", "bad magic");
  check("shape.npy", npy_file("|i1", "(1, 2)", "ab"), "does not match");
  check("dtype.npy", npy_file("<f8", "(1,)", "12345678"), "dtype '<f8'");
  // An empty array is well formed; it is refused for its shape, not read through a null pointer.
  check("empty.npy", npy_file("|i1", "(0, 32, 32, 3)", ""), "does not match");
  check("short.npy", npy_file("|i1", "(1, 32, 32, 3)", "abc"), "data bytes");
  std::string fortran = npy_file("|i1", "(1, 32, 32, 3)", std::string(3072, 'x'));
  fortran.replace(fortran.find("False"), 5, "True ");
  check("fortran.npy", fortran, "Fortran");
}

TEST(CliExec, BadBackendAndOptions) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const Result r = run_cli(dir, "exec " + resnet() + " --backend gpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, AllOf(HasSubstr("'gpu'"), HasSubstr("ref")));
  EXPECT_NE(run_cli(dir, "exec " + resnet() + " --seed 1 --input x.npy").exit_code, 0);
  EXPECT_NE(run_cli(dir, "exec " + resnet() + " --repeat 0").exit_code, 0);
  const Result missing = run_cli(dir, "exec " + quoted((dir / "none.xmodel").string()));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("none.xmodel"));
}

// A compiled file on ref runs its DPU computation lowered to `_int` ops (lower_compiled.hpp):
// the compiled ResNet-20, weights from its `_int` file, gives the `_int` file's output bytes
// under the compiled file's output name (the fix2float op, as `vart` names it).
TEST(CliExec, CompiledResNet20OnRefEqualsItsIntFile) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const QTensor q = random_qtensor("x", {1, 32, 32, 3}, 5, 21);
  testing::write_int8_npy(dir / "x.npy", q);
  const std::string input = " --input " + quoted((dir / "x.npy").string());
  const std::string compiled = quoted(fixture(testing::kResNetVck190).string());
  const Result r = run_cli(dir, "exec " + compiled + " --json --weights-from " + resnet() + input);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  const json i = exec_json(dir, input);
  ASSERT_EQ(c["outputs"].size(), 1U);
  EXPECT_EQ(c["inputs"][0]["name"], "CifarResNet__input_0");
  EXPECT_EQ(c["outputs"][0]["name"], "CifarResNet__CifarResNet_Linear_fc__ret_fix_");
  EXPECT_EQ(c["outputs"][0]["sha256"], i["outputs"][0]["sha256"]);
  EXPECT_EQ(c["outputs"][0]["shape"], i["outputs"][0]["shape"]);
  EXPECT_EQ(c["outputs"][0]["fix_point"], i["outputs"][0]["fix_point"]);
}

// A compiled file whose CPU subgraph holds XIR float ops after the DPU (fix2float, softmax,
// float2fix; a sigmoid leaving as float: support/float_cpu_tail.hpp) runs on ref and cpu with
// those ops lowered (lower_float_ops.hpp), and gives the `_int` file's bytes.
TEST(CliExec, CompiledFloatCpuTailOnRefAndCpuEqualsItsIntFile) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  Graph compiled = read_xmodel(fixture(testing::kResNetVck190));
  Graph int_graph = read_xmodel(fixture(testing::kResNetInt));
  testing::FloatCpuTail tail(compiled, int_graph);
  tail.add("tail_softmax", "softmax", 1, {{"axis", std::int32_t{-1}}}, tail.shape(), 7, 7);
  tail.add("tail_sigmoid", "sigmoid", 1, {}, tail.shape(), std::nullopt, 7);
  write_xmodel(compiled, dir / "compiled.xmodel");
  write_xmodel(int_graph, dir / "tail_int.xmodel");
  const std::string int_file = quoted((dir / "tail_int.xmodel").string());
  testing::write_int8_npy(dir / "x.npy", random_qtensor("x", {1, 32, 32, 3}, 5, 3));
  const std::string input = " --json --input " + quoted((dir / "x.npy").string());
  const Result want = run_cli(dir, "exec " + int_file + input);
  ASSERT_EQ(want.exit_code, 0) << want.err;
  const json i = json::parse(want.out);
  for (const char* backend : {"ref", "cpu"}) {
    const Result r = run_cli(dir, "exec " + quoted((dir / "compiled.xmodel").string()) + input +
                                      " --backend " + backend + " --weights-from " + int_file);
    if (std::string(backend) == "cpu" && r.err.find("not built here") != std::string::npos)
      continue;
    ASSERT_EQ(r.exit_code, 0) << backend << ": " << r.err;
    const json c = json::parse(r.out);
    ASSERT_EQ(c["outputs"].size(), 2U) << backend;
    EXPECT_EQ(c["outputs"][0]["name"], "tail_softmax_fix2float");
    EXPECT_EQ(c["outputs"][1]["name"], "tail_sigmoid");
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(c["outputs"][k]["sha256"], i["outputs"][k]["sha256"]) << backend << " " << k;
      EXPECT_EQ(c["outputs"][k]["fix_point"], 7) << backend << " " << k;
    }
  }
}

// The fixtures' const-fix ops are empty (the weights are packed for the DPU): without the
// `_int` file, one line naming the op and the option.
TEST(CliExec, CompiledWithoutItsWeightsIsOneLine) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  for (const char* file : {testing::kResNetVck190, testing::kMobileNetKv260}) {
    const Result r = run_cli(dir, "exec " + quoted(fixture(file).string()) + " --seed 1");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, AllOf(HasSubstr("dpushard: error: lower_compiled: op '"),
                             HasSubstr("(const-fix): holds no weights"),
                             HasSubstr("(--weights-from FILE_int.xmodel)")));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const Result misuse = run_cli(dir, "exec " + resnet() + " --weights-from " + resnet());
  EXPECT_EQ(misuse.exit_code, 1);
  EXPECT_THAT(misuse.err, HasSubstr("--weights-from is for a compiled model"));
}

// Without -DDPUSHARD_WITH_VART=ON, asking for the real-DPU backend says how to get it.
TEST(CliExec, VartNotBuiltHere) {
  DPUSHARD_REQUIRE_FIXTURES();
#ifdef DPUSHARD_WITH_VART
  GTEST_SKIP() << "this build has the vart backend";
#endif
  ScratchDir dir;
  const std::string message =
      "dpushard: error: backend 'vart' is not built here: configure with "
      "-DDPUSHARD_WITH_VART=ON where Vitis AI's runtime is installed\n";
  const Result exec = run_cli(dir, "exec " + resnet() + " --backend vart");
  EXPECT_EQ(exec.exit_code, 1);
  EXPECT_EQ(exec.err, message);
  const Result worker = run_cli(dir, "worker --listen 127.0.0.1:0 --backend vart");
  EXPECT_EQ(worker.exit_code, 1);
  EXPECT_EQ(worker.err, message);
}

}  // namespace
}  // namespace dpushard
