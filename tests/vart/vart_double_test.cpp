// The vart backend (core/src/exec/vart) running end to end on the VART double
// (double/vart_double.hpp) over the real XIR: its outputs against `ref` on the `_int`
// fragment, byte for byte, for the real compiled Versal fixture and compiled-equivalent
// fragments; DPU batches of 1, 4 and 6; several frames per job and several jobs per frame;
// a runner that is not a RunnerExt; tensors in another order than the graph's; the syncs
// around each job; injected failures.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "compile_equivalent.hpp"
#include "double/vart_double.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/vart_backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "exec/vart/dpu_child.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;
using vart_double::FaultKind;
using vart_double::Settings;
using vart_test::compile_equivalent;

const std::filesystem::path kFixtures = DPUSHARD_FIXTURE_DIR;

class VartOnDouble : public ::testing::Test {
 protected:
  void SetUp() override {
    register_vart_backend();
    vart_double::clear_journal();
  }
  void TearDown() override { vart_double::clear_settings(); }

  // In this process (the journal sees the runner's calls), or supervised in a child process
  // (what make_backend("vart") gives: the settings reach the child, this test program run as
  // `dpu-child`, through the environment set_settings exports).
  // from_ops: the double computes from the compiled ops (lower_compiled), with `int_graph`
  // giving only the weights.
  static std::unique_ptr<Backend> vart(const Graph& compiled, const Graph& int_graph,
                                       Settings settings = {}, bool supervised = false,
                                       bool from_ops = false) {
    (from_ops ? settings.weights_graph : settings.int_graph) = int_graph;
    vart_double::set_settings(settings);
    BackendOptions options;
    auto backend =
        supervised ? make_backend("vart", options) : make_vart_backend_in_process(options);
    backend->load(compiled);
    return backend;
  }

  // vart on `compiled` against ref on `int_graph`, over two seeded frames.
  static void expect_matches_ref(const Graph& compiled, const Graph& int_graph,
                                 Settings settings = {}, bool supervised = false,
                                 bool from_ops = false) {
    auto backend = vart(compiled, int_graph, settings, supervised, from_ops);
    auto ref = make_backend("ref");
    ref->load(int_graph);
    const auto vart_specs = input_specs(compiled);
    const auto ref_specs = input_specs(int_graph);
    ASSERT_EQ(vart_specs.size(), ref_specs.size());
    for (std::uint64_t seed : {1u, 2u}) {
      std::vector<QTensor> vart_in, ref_in;
      for (std::size_t i = 0; i < ref_specs.size(); ++i) {
        ref_in.push_back(random_qtensor(ref_specs[i].name, ref_specs[i].shape,
                                        ref_specs[i].fix_point, seed + i));
        QTensor v = ref_in.back();
        v.name = vart_specs[i].name;
        vart_in.push_back(std::move(v));
      }
      const auto expected = ref->run(ref_in);
      const auto actual = backend->run(vart_in);
      ASSERT_EQ(actual.size(), expected.size());
      for (std::size_t o = 0; o < expected.size(); ++o) {
        EXPECT_EQ(actual[o].shape, expected[o].shape);
        EXPECT_EQ(actual[o].fix_point, expected[o].fix_point);
        EXPECT_TRUE(actual[o].data == expected[o].data)
            << "output " << o << " ('" << expected[o].name << "'), seed " << seed;
      }
    }
  }
};

// x [n,8,8,8] -> conv 3x3 relu -> fix, plus y [n,8,8,8]: add(conv, y) -> fix and maxpool(y):
// two inputs and two outputs, so tensor order matters.
Graph two_in_two_out(std::int64_t n) {
  GraphBuilder b("two_in_two_out");
  const Value x = b.input("x", {n, 8, 8, 8}, 4);
  const Value y = b.input("y", {n, 8, 8, 8}, 5);
  std::vector<std::int8_t> w(8 * 3 * 3 * 8);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<std::int8_t>((i * 37) % 23 - 11);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::Relu;
  const Value c = b.conv2d("conv", x, b.constant("w", {8, 3, 3, 8}, w, 7), std::nullopt, spec, 3);
  b.add("sum", {c, y}, 2);
  b.maxpool2d("pool", y, Pool2dSpec{});
  return b.finish();
}

TEST_F(VartOnDouble, RealCompiledVersalFixtureMatchesRefOnItsIntFile) {
  const Graph compiled =
      read_xmodel(kFixtures / "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel");
  const Graph int_graph = read_xmodel(kFixtures / "resnet20_cifar10_int_quantized.xmodel");
  for (int batch : {1, 6}) {  // DPUCVDX8G_ISA3_C32B6 runs 6 frames a job
    SCOPED_TRACE("DPU batch " + std::to_string(batch));
    Settings s;
    s.batch = batch;
    expect_matches_ref(compiled, int_graph, s);
  }
}

// Without an `_int` fragment the double lowers the runner's DPU subgraph (lower_compiled):
// the real compiled ops, the `_int` file's weights (the compiled file's const-fix ops are
// empty), ref's bytes on the `_int` file.
TEST_F(VartOnDouble, RealCompiledVersalFixtureFromItsOwnOpsMatchesRef) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph compiled =
      read_xmodel(kFixtures / "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel");
  const Graph int_graph = read_xmodel(kFixtures / "resnet20_cifar10_int_quantized.xmodel");
  for (int batch : {1, 6}) {
    SCOPED_TRACE("DPU batch " + std::to_string(batch));
    Settings s;
    s.batch = batch;
    expect_matches_ref(compiled, int_graph, s, false, true);
  }
}

// The KV260 fixture's weights are packed for its DPU and its `_int` file is not here: the
// double cannot compute it, and load() says so in one line naming the empty const-fix op.
TEST_F(VartOnDouble, Kv260FixtureWithoutWeightsIsOneLineAtLoad) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph compiled =
      read_xmodel(kFixtures / "mobilenetv2_yawn_compiled_dpuczdx8g_kv260_vai25.xmodel");
  vart_double::set_settings(Settings{});
  auto backend = make_vart_backend_in_process(BackendOptions{});
  try {
    backend->load(compiled);
    ADD_FAILURE() << "load() accepted a graph the double cannot compute";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_THAT(what, HasSubstr("(const-fix): holds no weights"));
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST_F(VartOnDouble, CompiledEquivalentFragmentsMatchRef) {
  ZooSpec spec;
  spec.params = 300'000;
  spec.experts = 2;
  spec.input = {32, 32, 3};
  spec.classes = 10;
  for (const Graph& g : {two_in_two_out(1), make_cnn(spec)}) {
    SCOPED_TRACE(g.name());
    expect_matches_ref(compile_equivalent(g), g);
  }
}

TEST_F(VartOnDouble, SeveralFramesPerJobAndSeveralJobsPerFrame) {
  // 8 frames on a DPU of batch 4: two jobs of four; 4 frames on batch 1: four jobs.
  for (auto [frames, batch, jobs] : {std::tuple{8, 4, 2}, std::tuple{4, 1, 4}}) {
    SCOPED_TRACE(std::to_string(frames) + " frames, DPU batch " + std::to_string(batch));
    vart_double::clear_journal();
    Settings s;
    s.batch = batch;
    const Graph g = two_in_two_out(frames);
    expect_matches_ref(compile_equivalent(g), g, s);
    EXPECT_EQ(vart_double::journal().jobs, 2 * jobs);  // two frames (seeds)
  }
}

TEST_F(VartOnDouble, RunnerThatIsNotARunnerExt) {
  Settings s;
  s.plain_runner = true;
  s.batch = 4;
  const Graph g = two_in_two_out(4);
  expect_matches_ref(compile_equivalent(g), g, s);
}

TEST_F(VartOnDouble, TensorsInAnotherOrderThanTheGraphs) {
  Settings s;
  s.reverse_tensors = true;
  const Graph g = two_in_two_out(1);
  expect_matches_ref(compile_equivalent(g), g, s);
}

TEST_F(VartOnDouble, EveryJobIsFramedBySyncs) {
  const Graph g = two_in_two_out(1);
  auto backend = vart(compile_equivalent(g), g);
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(compile_equivalent(g)))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 1));
  backend->run(inputs);
  const auto journal = vart_double::journal();
  ASSERT_EQ(journal.jobs, 1);
  // Two inputs flushed before the job, two outputs invalidated after it, over a whole frame.
  ASSERT_EQ(journal.syncs.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(journal.syncs[i].for_write, i < 2) << i;
    EXPECT_EQ(journal.syncs[i].offset, 0u);
  }
  EXPECT_EQ(journal.syncs[0].size, 8u * 8u * 8u);
}

TEST_F(VartOnDouble, OutputFixPointComesFromTheRunnersTensor) {
  const Graph g = two_in_two_out(1);
  Graph compiled = compile_equivalent(g);
  // The compiler may give the DPU output another fix point than the `_int` fix op's; the
  // runner's tensor (the compiled file's) is the one that describes the bytes.
  const std::string f2f = compiled.outputs().back()->name;
  const std::string dpu_op = compiled.op(f2f).producers("input").at(0);
  compiled.find(dpu_op)->output.attrs["fix_point"] = std::int32_t{7};
  auto backend = vart(compiled, g);
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(compiled))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 1));
  const auto outputs = backend->run(inputs);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs.back().name, f2f);
  EXPECT_EQ(outputs.back().fix_point, 7);
}

std::string run_error(Backend& backend, const Graph& compiled) {
  // (defined before the supervised tests below, which use it too)
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(compiled))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 1));
  try {
    backend.run(inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST_F(VartOnDouble, InjectedStatusAndThrowBecomeOneLineErrors) {
  const Graph g = two_in_two_out(1);
  const Graph compiled = compile_equivalent(g);
  Settings s;
  s.fault = FaultKind::Status;
  auto backend = vart(compiled, g, s);
  EXPECT_THAT(run_error(*backend, compiled), HasSubstr("did not start (VART status 3)"));
  // Its only runner was retired: the fragment must be loaded again.
  EXPECT_THAT(run_error(*backend, compiled), HasSubstr("every DPU runner was retired"));

  vart_double::clear_journal();
  s.fault = FaultKind::Throw;
  backend = vart(compiled, g, s);
  EXPECT_THAT(run_error(*backend, compiled),
              HasSubstr("the DPU job did not start: vart double: injected failure in job 1"));
}

// What VART does on a board, and what nothing in the process can catch: the reason the
// worker runs the DPU in a child process (docs/vart.md).
TEST_F(VartOnDouble, InjectedAbortAndHangEndTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Graph g = two_in_two_out(1);
  const Graph compiled = compile_equivalent(g);
  Settings s;
  s.fault = FaultKind::Abort;
  EXPECT_DEATH(
      {
        auto backend = vart(compiled, g, s);
        run_error(*backend, compiled);
      },
      "injected abort in job 1");
  setenv("XLNX_DPU_TIMEOUT", "200", 1);
  s.fault = FaultKind::Hang;
  EXPECT_DEATH(
      {
        auto backend = vart(compiled, g, s);
        run_error(*backend, compiled);
      },
      "DPU timeout after 200 ms");
  unsetenv("XLNX_DPU_TIMEOUT");
}

std::vector<QTensor> frame_inputs(const Graph& compiled, std::uint64_t seed) {
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(compiled))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, seed));
  return inputs;
}

TEST_F(VartOnDouble, SupervisedChildMatchesRef) {
  const Graph g = two_in_two_out(4);
  Settings s;
  s.batch = 4;
  expect_matches_ref(compile_equivalent(g), g, s, true);
  const Graph fixture = read_xmodel(kFixtures / "resnet20_cifar10_int_quantized.xmodel");
  expect_matches_ref(
      read_xmodel(kFixtures / "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel"), fixture,
      {}, true);
}

// The DPU process is this program's own image run as `dpu-child`, not a fork of it.
TEST_F(VartOnDouble, SupervisedChildIsItsOwnImage) {
  const Graph g = two_in_two_out(1);
  auto backend = vart(compile_equivalent(g), g, {}, true);
  const pid_t child = dynamic_cast<vart_detail::SupervisedBackend&>(*backend).child();
  ASSERT_GT(child, 0);
  const auto proc = std::filesystem::path("/proc") / std::to_string(child);
  EXPECT_EQ(std::filesystem::read_symlink(proc / "exe"),
            std::filesystem::read_symlink("/proc/self/exe"));
  std::ifstream cmdline(proc / "cmdline");
  std::vector<std::string> args;
  for (std::string arg; std::getline(cmdline, arg, '\0');) args.push_back(arg);
  ASSERT_GE(args.size(), 2u);
  EXPECT_EQ(args[1], "dpu-child");  // a fork would show this test's own arguments
  EXPECT_NE(std::find(args.begin(), args.end(), "--fragment"), args.end());
}

// An abort in the DPU process costs its frame: one error naming the graph and the signal,
// the process restarted, the next frames served.
TEST_F(VartOnDouble, SupervisedChildAbortCostsOneFrame) {
  const Graph g = two_in_two_out(1);
  const Graph compiled = compile_equivalent(g);
  Settings s;
  s.fault = FaultKind::Abort;
  s.fault_job = 2;  // counted in each child: its second frame
  auto backend = vart(compiled, g, s, true);
  auto ref = make_backend("ref");
  ref->load(g);
  EXPECT_NO_THROW(backend->run(frame_inputs(compiled, 1)));
  const std::string error = run_error(*backend, compiled);
  EXPECT_THAT(error, HasSubstr("vart: graph 'two_in_two_out': the DPU process died during the "
                               "frame (killed by signal 6"));
  EXPECT_THAT(error, HasSubstr("restarted it (restart 1)"));
  EXPECT_EQ(error.find('\n'), std::string::npos);
  // The new process serves the next frame, with the right bytes.
  std::vector<QTensor> ref_inputs;
  for (const QTensor& spec : input_specs(g))
    ref_inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 3));
  auto inputs = ref_inputs;
  const auto specs = input_specs(compiled);
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].name = specs[i].name;
  EXPECT_EQ(backend->run(inputs)[0].data, ref->run(ref_inputs)[0].data);
}

// A DPU that never comes back: VART's own timeout (XLNX_DPU_TIMEOUT, which the parent sets to
// the frame's budget) ends the child; a controller that does not time out either is killed
// by the parent at the budget plus a grace.
TEST_F(VartOnDouble, SupervisedChildHangCostsOneFrame) {
  const Graph g = two_in_two_out(1);
  const Graph compiled = compile_equivalent(g);
  for (FaultKind fault : {FaultKind::Hang, FaultKind::Stall}) {
    Settings s;
    s.fault = fault;
    auto backend = vart(compiled, g, s, true);
    const auto start = std::chrono::steady_clock::now();
    const std::string error = run_error(*backend, compiled);
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
    if (fault == FaultKind::Hang)
      EXPECT_THAT(error, HasSubstr("died during the frame (killed by signal 6"));
    else
      EXPECT_THAT(error, HasSubstr("exceeded its time budget of 2000 ms; the DPU process was "
                                   "killed; restarted it (restart 1)"));
    EXPECT_LT(seconds.count(), 30.0);
  }
  // An error VART throws keeps its text; the runner it retired is replaced by a new process.
  Settings s;
  s.fault = FaultKind::Throw;
  auto backend = vart(compiled, g, s, true);
  EXPECT_THAT(run_error(*backend, compiled),
              HasSubstr("the DPU job did not start: vart double: injected failure in job 1; "
                        "restarted it (restart 1)"));
}

// A DPU process that cannot start again backs off: the failed restart says when the next
// attempt is, frames before then fail at once without starting a process, the wait doubles,
// and once the DPU opens again frames are served.
TEST_F(VartOnDouble, SupervisedChildBacksOffWhenItCannotStart) {
  const Graph g = two_in_two_out(1);
  const Graph compiled = compile_equivalent(g);
  const auto broken =
      std::filesystem::temp_directory_path() / ("vart-broken-" + std::to_string(::getpid()));
  const auto marker = broken.string() + ".fault";
  std::filesystem::remove(broken);
  std::filesystem::remove(marker);
  Settings s;
  s.fault = FaultKind::Abort;  // the first process's first frame, once
  s.fault_job = 1;
  s.fault_marker = marker;
  s.broken_while = broken.string();
  auto backend = vart(compiled, g, s, true);
  EXPECT_EQ(backend->runner_batch(), 1u);
  const auto attempts = [&] {  // the runners the broken DPU refused: one per attempted start
    std::ifstream file(broken);
    return std::count(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>(), '\n');
  };
  std::ofstream(broken).flush();
  ::testing::internal::CaptureStderr();
  std::string error = run_error(*backend, compiled);
  EXPECT_THAT(error, HasSubstr("died during the frame (killed by signal 6"));
  EXPECT_THAT(error, HasSubstr("restarting it failed: "));
  EXPECT_THAT(error, HasSubstr("the DPU cannot be opened"));
  EXPECT_THAT(error, HasSubstr("next attempt in 500 ms"));
  EXPECT_EQ(attempts(), 1);
  // Within the back-off: no attempt, an error at once with the reason.
  auto start = std::chrono::steady_clock::now();
  error = run_error(*backend, compiled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_THAT(error, HasSubstr("the DPU process is down after 1 failed start (last: "));
  EXPECT_THAT(error, HasSubstr("the DPU cannot be opened"));
  EXPECT_EQ(attempts(), 1);
  // After it: one attempt, which fails again and doubles the wait.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  error = run_error(*backend, compiled);
  EXPECT_THAT(error, HasSubstr("next attempt in 1000 ms"));
  EXPECT_EQ(attempts(), 2);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("event=dpu_backoff failed_starts=1 next_attempt_ms=500 reason=\""));
  EXPECT_THAT(log, HasSubstr("event=dpu_backoff failed_starts=2 next_attempt_ms=1000 reason=\""));
  // The DPU opens again: after the wait, the next frame starts a process and is served.
  std::filesystem::remove(broken);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto ref = make_backend("ref");
  ref->load(g);
  std::vector<QTensor> ref_inputs;
  for (const QTensor& spec : input_specs(g))
    ref_inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 5));
  auto inputs = ref_inputs;
  const auto specs = input_specs(compiled);
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].name = specs[i].name;
  EXPECT_EQ(backend->run(inputs)[0].data, ref->run(ref_inputs)[0].data);
  std::filesystem::remove(marker);
}

// A DPU process that hangs while loading is killed at the load timeout (here made short:
// the budget and grace, 2000 ms) and counts as a failed start, which backs off.
TEST_F(VartOnDouble, SupervisedChildThatHangsAtLoadIsKilledAndBacksOff) {
  const Graph g = two_in_two_out(1);
  const Graph compiled = compile_equivalent(g);
  const auto broken =
      std::filesystem::temp_directory_path() / ("vart-hangs-" + std::to_string(::getpid()));
  const auto marker = broken.string() + ".fault";
  std::filesystem::remove(broken);
  std::filesystem::remove(marker);
  Settings s;
  s.fault = FaultKind::Abort;
  s.fault_job = 1;
  s.fault_marker = marker;
  s.broken_while = broken.string();
  s.broken_hangs = true;
  auto backend = vart(compiled, g, s, true);
  vart_detail::DpuProcess::shared()->set_load_timeout_ms(0);
  std::ofstream(broken).flush();
  const auto start = std::chrono::steady_clock::now();
  std::string error = run_error(*backend, compiled);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(error, HasSubstr("restarting it failed: "));
  EXPECT_THAT(error, HasSubstr("the DPU process did not load the fragments within 2000 ms; "
                               "next attempt in 500 ms"));
  EXPECT_GE(took, std::chrono::milliseconds(2000));
  EXPECT_LT(took, std::chrono::milliseconds(10000));
  error = run_error(*backend, compiled);  // within the back-off: at once
  EXPECT_THAT(error, HasSubstr("the DPU process is down after 1 failed start (last: "));
  EXPECT_THAT(error, HasSubstr("did not load the fragments within 2000 ms"));
  vart_detail::DpuProcess::shared()->set_load_timeout_ms(vart_detail::kLoadTimeoutMs);
  std::filesystem::remove(broken);
  std::filesystem::remove(marker);
}

TEST(VartBackoff, DoublesFromHalfASecondUpToThirtySeconds) {
  using vart_detail::backoff_ms;
  EXPECT_EQ(backoff_ms(0), 0);
  EXPECT_EQ(backoff_ms(1), 500);
  EXPECT_EQ(backoff_ms(2), 1000);
  EXPECT_EQ(backoff_ms(3), 2000);
  EXPECT_EQ(backoff_ms(7), 30000);  // 32 s, capped
  EXPECT_EQ(backoff_ms(1000), 30000);
}

}  // namespace
}  // namespace dpushard
