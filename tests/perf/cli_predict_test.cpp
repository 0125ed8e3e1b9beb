// `dpushard predict` as a user runs it: the built binary, its exit code, one JSON object on
// stdout, one error line on stderr.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "dpushard/perf/perf.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "perf/resnets.hpp"
#include "support/cli_runner.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using testing::fixture;
using testing::ScratchDir;

using Result = testing::CliResult;
using testing::quoted;
using testing::run_cli;

TEST(CliPredict, CompiledMobileNetJson) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const Result r =
      run_cli(dir, "predict " + quoted(fixture(testing::kMobileNetKv260).string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["target"], "kv260");
  EXPECT_EQ(j["compiled"], true);
  EXPECT_GT(j["fps"].get<double>(), 0);
  EXPECT_NEAR(j["fps"].get<double>(), 1000.0 / j["frame_ms"].get<double>(), 1e-6);
  EXPECT_EQ(j["dpu_subgraphs"], 1);
  EXPECT_GT(j["compiler_workload"].get<long long>(), 0);
  ASSERT_FALSE(j["ops"].empty());
  const json& op = j["ops"][0];
  for (const char* key :
       {"op", "type", "engine", "bound", "cycles", "ms", "compute_ms", "memory_ms"})
    EXPECT_TRUE(op.contains(key)) << key;
  EXPECT_TRUE(j["cpu_ops"].empty());
  // Every op on the DPU: all its MACs there; its time less than all (host and launches).
  EXPECT_DOUBLE_EQ(j["dpu_mac_share"].get<double>(), 1.0);
  EXPECT_GT(j["dpu_time_share"].get<double>(), 0.0);
  EXPECT_LT(j["dpu_time_share"].get<double>(), 1.0);
  EXPECT_NEAR(j["dpu_time_share"].get<double>(),
              j["dpu_ms"].get<double>() / j["latency_ms"].get<double>(), 1e-12);
}

// DPU utilization per fragment and for the whole model: predict on a plan gives each
// fragment's shares as its worker runs it, the whole as the sums over the fragments, and the
// planner recorded the same figures in plan.yaml.
TEST(CliPredict, APlanGivesEachFragmentsDpuUtilizationAndTheWholeModels) {
  ScratchDir dir;
  const std::string model = (dir.path() / "vit_int.xmodel").string();
  const std::string plan = (dir.path() / "plan").string();
  ASSERT_EQ(run_cli(dir,
                    "zoo convvit --attention softmax --params 1M --experts 3 --input "
                    "32x32x3 --classes 10 --no-weights -o " +
                        model)
                .exit_code,
            0);
  const Result split =
      run_cli(dir, "split " + model + " --nodes 3 --strategy experts --target kv260 -o " + plan);
  ASSERT_EQ(split.exit_code, 0) << split.err;
  const Result r = run_cli(dir, "predict " + quoted(plan) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_GE(j["fragments"].size(), 3u);
  double macs = 0, dpu_macs = 0, dpu_ms = 0, frame_ms = 0;
  const std::string yaml = testing::read_bytes(dir.path() / "plan" / "plan.yaml");
  for (const json& f : j["fragments"]) {
    macs += f["macs"].get<double>();
    dpu_macs += f["dpu_macs"].get<double>();
    dpu_ms += f["dpu_ms"].get<double>();
    frame_ms += f["latency_ms"].get<double>();
    EXPECT_NEAR(f["dpu_mac_share"].get<double>(),
                f["dpu_macs"].get<double>() / f["macs"].get<double>(), 1e-12);
    EXPECT_NEAR(f["dpu_busy_share"].get<double>(),
                f["dpu_ms"].get<double>() / f["worker_ms"].get<double>(), 1e-12);
    EXPECT_LE(f["dpu_time_share"].get<double>(), f["dpu_busy_share"].get<double>() + 1e-12);
  }
  EXPECT_NEAR(j["dpu_mac_share"].get<double>(), dpu_macs / macs, 1e-12);
  EXPECT_NEAR(j["dpu_time_share"].get<double>(), dpu_ms / frame_ms, 1e-12);
  // Softmax attention leaves work on the A53: some, not all, of it on the DPU.
  EXPECT_GT(j["dpu_mac_share"].get<double>(), 0.5);
  EXPECT_LT(j["dpu_time_share"].get<double>(), 1.0);
  EXPECT_NE(yaml.find("dpu_macs:"), std::string::npos);
  EXPECT_NE(yaml.find("frame_ms:"), std::string::npos);
  // The human table has a row per fragment and the whole model's.
  const Result human = run_cli(dir, "predict " + quoted(plan));
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.err.find("whole model"), std::string::npos) << human.err;
  EXPECT_NE(human.err.find("experts0"), std::string::npos) << human.err;
}

TEST(CliPredict, HumanOutputGoesToStderr) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const Result r = run_cli(dir, "predict " + quoted(fixture(testing::kResNetInt).string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("fps"), std::string::npos);
  EXPECT_NE(r.err.find("compute"), std::string::npos);
}

TEST(CliPredict, CalibrationProcedureFromTheCommandLine) {
  ScratchDir dir;
  const auto model = dir / "resnet50_int.xmodel";
  write_xmodel(testing::make_resnet50(), model);
  const Result r =
      run_cli(dir, "predict " + quoted(model.string()) + " --calibrate-fps 89.34 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const Target shipped = load_target(DPUSHARD_SOURCE_DIR "/targets/kv260_b4096.yaml");
  EXPECT_NEAR(j["compute_efficiency"].get<double>(), shipped.compute_efficiency, 0.005);

  const Result p = run_cli(dir, "predict " + quoted(model.string()) + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NEAR(json::parse(p.out)["fps"].get<double>(), 89.34, 0.02 * 89.34);
}

#if DPUSHARD_SLOW_TESTS
// Opt-in (cmake -DDPUSHARD_SLOW_TESTS=ON, needs Debian's python3-torch): the calibration
// point through the real path, torchvision's resnet50 exported to ONNX and `dpushard import`ed.
TEST(CliPredictSlow, ImportedTorchvisionResNet50MatchesTheCalibration) {
  ScratchDir dir;
  const std::string script = DPUSHARD_SOURCE_DIR "/tests/onnx/make_models.py";
  const std::string export_cmd = "/usr/bin/python3 " + quoted(script) + " torchvision resnet50 " +
                                 quoted(dir.path().string()) + " --size 224 >/dev/null 2>&1";
  if (std::system(export_cmd.c_str()) != 0) GTEST_SKIP() << "torch/torchvision unavailable";
  const auto model = dir / "resnet50_int.xmodel";
  const Result imported = run_cli(dir, "import " + quoted((dir / "model.onnx").string()) +
                                           " --calib-random 2 -o " + quoted(model.string()));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const Result p = run_cli(dir, "predict " + quoted(model.string()) + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NEAR(json::parse(p.out)["fps"].get<double>(), 89.34, 0.02 * 89.34);
}
#endif

TEST(CliPredict, TargetFileErrorsNameTheField) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const auto bad = dir / "bad.yaml";
  testing::write_bytes(bad, "name: x\ndpu:\n  arch: y\n");
  const Result r = run_cli(dir, "predict " + quoted(fixture(testing::kResNetInt).string()) +
                                    " --target-file " + quoted(bad.string()) + " --json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("dpu.clock_mhz"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line

  const Result unknown =
      run_cli(dir, "predict " + quoted(fixture(testing::kResNetInt).string()) + " --target zcu999");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("kv260"), std::string::npos) << unknown.err;
}

}  // namespace
}  // namespace dpushard
