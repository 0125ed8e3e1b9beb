// `dpushard calibrate` end to end on the VART double (dpushard_on_vart_double): the double's
// jobs take the time a known target ("the board") gives each compiled model
// (DPUSHARD_VART_DOUBLE_TIMING), the command times the compiled micro-models and three zoo CNNs
// through the vart backend and its supervised DPU process, and its fit must find the injected
// DPU efficiency, latency floors and host figures again within 5 %. The target it writes must
// be one that predict, split and the sim backend take.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "compile_equivalent.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/micro.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "support/cpu_tail_model.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;
const std::string kCli = DPUSHARD_VART_CLI;
// A folder per process: ctest runs the tests of this file in parallel processes.
const fs::path kWork =
    fs::path(DPUSHARD_VART_TEST_WORK) / "calibrate" / ("pid" + std::to_string(::getpid()));

// The injected board: figures far from the KV260 base so that finding them is no accident.
// Each is large beside what this machine adds: the double's own host path (the DPU process's
// round trip, about 0.1 ms a frame, which the fit rightly counts in the fixed cost) is 2 % of
// the fixed cost, and the ALU floor (0.3 ms) is many times the spread of a model's fastest of
// 25 frames (about 10 us). At 0.1 ms and 7 frames the ALU floor came out 5-13 % off. The 25
// frames are taken in 3 passes over the models (--passes): in one pass, the copy cost came
// out more than 5 % off in 2 of 10 runs at load 5 (a slow spell on the large-input models).
const std::map<std::string, double> kTruth = {
    {"dpu.compute_efficiency", 0.55},
    {"dpu.min_op_cycles", 40'000},
    {"dpu.alu_min_op_cycles", 90'000},
    {"host.per_frame_us+overheads.per_subgraph_us", 5'000},
    {"host.copy_ns_per_byte", 40}};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces `  key: value` (the first such line) in a target's text.
void set(std::string& yaml, const std::string& key, double value) {
  const auto at = yaml.find("  " + key + ":");
  ASSERT_NE(at, std::string::npos) << key;
  const auto end = yaml.find('\n', at);
  std::ostringstream line;
  line << "  " << key << ": " << value;
  yaml.replace(at, end - at, line.str());
}

// The models: every micro-model the DPU runs whole and three zoo CNNs, compiled-equivalent.
void write_models(const fs::path& dir) {
  fs::create_directories(dir);
  const Target kv260 = builtin_target("kv260");
  for (const MicroModelInfo& m : micro_models()) {
    const Graph g = make_micro_model(m.name);
    const Prediction p = predict(g, kv260);
    // compile_equivalent lays out fragments that end in fix ops (the `_nofix` ones do not).
    if (p.cpu_subgraphs != 0 || p.dpu_subgraphs != 1 || m.name.ends_with("_nofix")) continue;
    write_xmodel(vart_test::compile_equivalent(g), dir / (m.name + ".xmodel"));
  }
  // Floor-bound layers only (3M, 112x112), compute-bound ones besides (10M at 224x224, 20M at
  // 112x112), with 37 kB and 150 kB inputs: what separates the copy cost from the compute.
  for (const auto& [params, side] : {std::pair<std::int64_t, std::int64_t>{3'000'000, 112},
                                     {10'000'000, 224},
                                     {20'000'000, 112}}) {
    ZooSpec spec;
    spec.params = params;
    spec.input = {side, side, 3};
    spec.classes = 10;
    write_xmodel(vart_test::compile_equivalent(make_cnn(spec)),
                 dir / ("cnn" + std::to_string(params) + "_" + std::to_string(side) + ".xmodel"));
  }
  // Not compiled: listed as skipped, not timed.
  write_xmodel(make_micro_model(micro_models().front().name), dir / "not_compiled_int.xmodel");
}

using testing::cpu_tail_model;

// The CPU-heavy models (a DPU subgraph, then a CPU one: calibrate runs them as VART, then
// the host): each class at three sizes. The softmax tails are in vai_c_xir's float form
// (fix2float, softmax, float2fix; the smallest one's softmax a float output), the LeakyReLU
// tails `_int` ops: calibrate lowers the one and runs the other.
std::vector<std::string> write_cpu_tail_models(const fs::path& dir) {
  std::vector<std::string> names;
  // Softmax costs about 3 times a LeakyReLU's time per element here: the LeakyReLUs are larger.
  const std::vector<std::pair<std::string, std::array<std::int64_t, 2>>> models = {
      {"softmax", {16, 64}}, {"softmax", {24, 64}}, {"softmax", {32, 96}},
      {"leaky", {24, 64}},   {"leaky", {32, 96}},   {"leaky", {40, 128}}};
  for (const auto& [kind, size] : models) {
    const Graph g = cpu_tail_model(kind, size[0], size[1]);
    Graph compiled = vart_test::compile_equivalent(g, {kind});
    if (kind == "softmax") {
      compiled = vart_test::with_float_cpu_ops(compiled, size[0] == 16);
      const auto float2fix = std::count_if(compiled.ops().begin(), compiled.ops().end(),
                                           [](const Op& op) { return op.type == "float2fix"; });
      EXPECT_EQ(float2fix, size[0] == 16 ? 0 : 1) << compiled.name();
    }
    write_xmodel(compiled, dir / (g.name() + ".xmodel"));
    names.push_back(g.name() + ".xmodel");
  }
  return names;
}

struct CliRun {
  int status = 0;
  std::string out, err;
};

CliRun cli(const std::string& env, const std::string& args) {
  fs::create_directories(kWork);
  const std::string command = env + " '" + kCli + "' " + args + " >'" + (kWork / "out").string() +
                              "' 2>'" + (kWork / "err").string() + "'";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read(kWork / "out"), read(kWork / "err")};
}

class Calibrate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::remove_all(kWork);
    write_models(kWork / "models");
    std::string board(builtin_target_yaml("kv260"));
    set(board, "compute_efficiency", 0.55);
    set(board, "min_op_cycles", 40'000);
    set(board, "alu_min_op_cycles", 90'000);
    set(board, "per_subgraph_us", 500);
    set(board, "per_frame_us", 4'500);
    set(board, "copy_in_ns_per_byte", 40);
    set(board, "copy_out_ns_per_byte", 40);
    std::ofstream(kWork / "board.yaml") << board;
  }
  static void TearDownTestSuite() { fs::remove_all(kWork); }
  static std::string board_env() {
    return "DPUSHARD_VART_DOUBLE_TIMING='" + (kWork / "board.yaml").string() +
           "' DPUSHARD_VART_DOUBLE_NULL_JOBS=1";
  }
};

TEST_F(Calibrate, RecoversTheInjectedFiguresWithinFivePercent) {
  const fs::path target = kWork / "calibrated.yaml";
  const CliRun r =
      cli(board_env(),
          "calibrate '" + (kWork / "models").string() + "' -o '" + target.string() +
              "' --name kv260-double --frames 25 --passes 3 --warmup 2 --statistic min --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GE(j["models"].size(), 8u);
  ASSERT_EQ(j["skipped"].size(), 1u);
  EXPECT_NE(j["skipped"][0]["file"].get<std::string>().find("not_compiled_int"), std::string::npos);
  for (const auto& p : j["parameters"]) {
    const std::string name = p["name"];
    if (!kTruth.contains(name)) {  // the A53 path's figures: no model here has a CPU op
      EXPECT_FALSE(p["fitted"].get<bool>()) << name;
      EXPECT_NE(p["note"].get<std::string>().find("not fitted"), std::string::npos) << name;
      continue;
    }
    const double truth = kTruth.at(name);
    EXPECT_TRUE(p["fitted"].get<bool>()) << name << ": " << p["note"];
    EXPECT_NEAR(p["value"].get<double>(), truth, 0.05 * truth) << name << "\n" << r.out;
  }
  EXPECT_EQ(j["residuals"].size(), j["models"].size());
  EXPECT_LT(j["rms_relative_residual"].get<double>(), 0.05) << r.out;

  // The file: what the fit says, with its residuals, a target predict, split and sim take.
  const std::string yaml = read(target);
  const Target t = load_target(target);
  EXPECT_EQ(t.name, "kv260-double");
  EXPECT_NEAR(t.compute_efficiency, 0.55, 0.05 * 0.55);
  EXPECT_NE(yaml.find("# residuals per model"), std::string::npos);
  const fs::path model = kWork / "models" / "cnn3000000_112.xmodel";
  const CliRun predicted =
      cli("", "predict '" + model.string() + "' --target '" + target.string() + "' --json");
  ASSERT_EQ(predicted.status, 0) << predicted.err;
  EXPECT_EQ(nlohmann::json::parse(predicted.out)["target"], "kv260-double");
  ZooSpec spec;
  spec.params = 300'000;
  spec.input = {64, 64, 3};
  spec.classes = 10;
  const Graph cnn = make_cnn(spec);
  write_xmodel(cnn, kWork / "cnn_int.xmodel");
  const CliRun split = cli("", "split '" + (kWork / "cnn_int.xmodel").string() +
                                   "' --nodes 2 --strategy pipeline --target '" + target.string() +
                                   "' -o '" + (kWork / "plan").string() + "'");
  EXPECT_EQ(split.status, 0) << split.err;
  register_builtin_backends();
  BackendOptions options;
  options.settings["target"] = target.string();
  const auto sim = make_backend("sim", options);
  sim->load(cnn);
  std::vector<QTensor> inputs;
  for (const QTensor& s : input_specs(cnn))
    inputs.push_back(random_qtensor(s.name, s.shape, s.fix_point, 1));
  EXPECT_EQ(sim->run(inputs).size(), cnn.outputs().size());
}

// Models with a CPU subgraph after the DPU's: the DPU part's time is the injected board's, the
// CPU ops really run on this machine (the ref backend, one thread), so the truth of the CPU
// rates is this machine's: the fit must predict the CPU-heavy models' own times within 5 %,
// and still find the injected DPU efficiency and floors. This board's fixed cost is 1 ms and
// it copies at 4 ns a byte (the others' 5 ms and 40 ns would make the tails' frames fixed cost
// and copies, not CPU work); the fixed cost is not checked here (the double's own 0.1 ms a
// frame is 10 % of it; the test above checks it). The CPU ops take 0.3-3 ms and the frames
// 1.5-5 ms: on a machine shared with other work a longer frame is rarely spared by the
// scheduler, and its fastest of 60 is then no longer its own time. The 60 frames are taken
// in 5 passes over the models, so that a slow spell of the machine does not fall on some
// models only (taken one model after the other, the softmax models came out 5-17 % apart; in
// 3 passes, 1 run of 8 had 3 of the 6 over 5 %).
TEST_F(Calibrate, CpuSubgraphsFitTheHostPathsRates) {
  const fs::path models = kWork / "models_cpu";
  fs::create_directories(models);
  for (const auto& entry : fs::directory_iterator(kWork / "models"))
    if (entry.path().filename().string() != "not_compiled_int.xmodel")
      fs::copy_file(entry.path(), models / entry.path().filename(),
                    fs::copy_options::overwrite_existing);
  const std::vector<std::string> tails = write_cpu_tail_models(models);
  std::string board = read(kWork / "board.yaml");
  set(board, "per_frame_us", 500);
  set(board, "copy_in_ns_per_byte", 4);
  set(board, "copy_out_ns_per_byte", 4);
  std::ofstream(kWork / "board_cpu.yaml") << board;
  const fs::path target = kWork / "calibrated_cpu.yaml";
  const CliRun r =
      cli("DPUSHARD_VART_DOUBLE_TIMING='" + (kWork / "board_cpu.yaml").string() +
              "' DPUSHARD_VART_DOUBLE_NULL_JOBS=1",
          "calibrate '" + models.string() + "' -o '" + target.string() +
              "' --cpu-backend ref --frames 60 --passes 5 --warmup 2 --statistic min --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["skipped"].size(), 0u) << r.out;
  EXPECT_EQ(j["cpu_backend"], "ref");
  std::map<std::string, nlohmann::json> parameter;
  for (const auto& p : j["parameters"]) parameter[p["name"]] = p;
  for (const char* fitted :
       {"cpu.fallback_gflops.transcendental", "cpu.fallback_gflops.elementwise"})
    EXPECT_TRUE(parameter[fitted]["fitted"].get<bool>()) << fitted << "\n" << r.out;
  // The host path adds little per CPU subgraph here (a few tens of us): fitted, or held at 0
  // when the frames' noise puts it below.
  const nlohmann::json& launch = parameter["overheads.per_subgraph_us"];
  EXPECT_TRUE(launch["fitted"].get<bool>() ||
              launch["note"].get<std::string>().starts_with("held at 0"))
      << r.out;
  EXPECT_FALSE(parameter["cpu.fallback_gflops.gemm"]["fitted"].get<bool>());
  for (const char* dpu : {"dpu.compute_efficiency", "dpu.min_op_cycles", "dpu.alu_min_op_cycles"}) {
    const double truth = kTruth.at(dpu);
    EXPECT_NEAR(parameter[dpu]["value"].get<double>(), truth, 0.05 * truth) << dpu << "\n" << r.out;
  }
  // The CPU-heavy models: most of each frame is the host's CPU ops, and the fit predicts it.
  int checked = 0;
  for (const auto& res : j["residuals"]) {
    const std::string model = res["model"];
    if (std::find(tails.begin(), tails.end(), model) == tails.end()) continue;
    ++checked;
    EXPECT_LT(std::abs(res["relative_residual"].get<double>()), 0.05) << model << "\n" << r.out;
  }
  EXPECT_EQ(checked, static_cast<int>(tails.size()));
  std::printf(
      "this machine's CPU path: transcendental %.3g GFLOP/s, elementwise %.3g GFLOP/s, "
      "a CPU subgraph's launch %.3g us\n",
      parameter["cpu.fallback_gflops.transcendental"]["value"].get<double>(),
      parameter["cpu.fallback_gflops.elementwise"]["value"].get<double>(),
      parameter["overheads.per_subgraph_us"]["value"].get<double>());
  for (const auto& res : j["residuals"])
    if (std::find(tails.begin(), tails.end(), res["model"]) != tails.end())
      std::printf("  %s: measured %.4f ms, model %.4f ms (%+.2f %%)\n",
                  res["model"].get<std::string>().c_str(), res["measured_ms"].get<double>(),
                  res["model_ms"].get<double>(), 100 * res["relative_residual"].get<double>());
  const Target t = load_target(target);
  EXPECT_NEAR(t.cpu_transcendental_gflops,
              parameter["cpu.fallback_gflops.transcendental"]["value"].get<double>(),
              1e-5 * t.cpu_transcendental_gflops);
  EXPECT_NE(read(target).find("# calibrated"), std::string::npos);
}

TEST_F(Calibrate, HumanOutputNamesEveryModelAndFigure) {
  const fs::path target = kWork / "human.yaml";
  const CliRun r =
      cli(board_env(), "calibrate '" + (kWork / "models" / "cnn3000000_112.xmodel").string() +
                           "' '" + (kWork / "models").string() + "' -o '" + target.string() +
                           "' --frames 3 --warmup 1 --statistic min");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("timed "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dpu.compute_efficiency"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote " + target.string()), std::string::npos) << r.err;
  EXPECT_EQ(load_target(target).name, "kv260-calibrated");
}

TEST_F(Calibrate, BadInputIsOneLine) {
  const std::string models = "'" + (kWork / "models").string() + "'";
  const std::string one_line_error = "dpushard: error: ";
  struct Case {
    std::string args;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"calibrate '" + (kWork / "nothing").string() + "' -o x.yaml", 1, "no such file or folder"},
      {"calibrate " + models + " -o '" + kWork.string() + "'", 1, "is a folder"},
      {"calibrate " + models + " -o x.yaml --frames 0", 2, "--frames"},
      {"calibrate " + models + " -o x.yaml --name 'a b'", 1, "--name"},
      {"calibrate " + models + " -o x.yaml --target nosuchboard", 1, "nosuchboard"},
      {"calibrate " + models + " -o x.yaml --backend nosuchbackend", 1, "nosuchbackend"},
      {"calibrate '" + (kWork / "models" / "cnn3000000_112.xmodel").string() + "' -o '" +
           (kWork / "few.yaml").string() + "' --frames 1 --warmup 0",
       1, "are needed"},
      {"calibrate '" + (kWork / "models" / "not_compiled_int.xmodel").string() + "' -o x.yaml", 1,
       "no model could be timed"},
  };
  for (const Case& c : cases) {
    const CliRun r = cli(board_env(), c.args);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.err;
    // The error is the last line (a model skipped on the way is a line of its own before it).
    const auto last = r.err.rfind('\n', r.err.size() - 2) + 1;
    const std::string error = r.err.substr(last);
    EXPECT_EQ(error.rfind(one_line_error, 0), 0u) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find(one_line_error), last) << c.args << "\n" << r.err;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.args << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(kWork / "few.yaml"));
}

}  // namespace
}  // namespace dpushard
