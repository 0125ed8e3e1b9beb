// The sim backend: frames complete after the modeled time (steady clock), concurrent frames
// queue on the one modeled engine, outputs are marked not computed unless its "numerics" option is
// set.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/exec/sim_backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// A small conv graph; its modeled time is dominated by the target's overheads below.
Graph small_model() {
  GraphBuilder b("sim");
  const Value x = b.input("x", {1, 8, 8, 16}, 6);
  const Value w = b.constant("w", {16, 3, 3, 16}, std::vector<std::int8_t>(16 * 9 * 16, 1), 7);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::Relu;
  b.conv2d("conv", x, w, std::nullopt, spec, 4);
  return b.finish();
}

// The KV260 target with a 10 ms subgraph launch and 40 ms of host time per frame, so the
// modeled times are long enough to measure and short enough to keep the test quick.
class SimBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    register_builtin_backends();  // sim, and cpu for its numerics where built
    use_target({});
  }

  // The slow KV260 with further `edits` (regex, replacement) of its YAML.
  void use_target(const std::vector<std::pair<std::string, std::string>>& edits) {
    std::string yaml(builtin_target_yaml("kv260"));
    yaml =
        std::regex_replace(yaml, std::regex("per_subgraph_us: [0-9.]+"), "per_subgraph_us: 10000");
    yaml = std::regex_replace(yaml, std::regex("per_frame_us: [0-9.]+"), "per_frame_us: 40000");
    for (const auto& [pattern, with] : edits) {
      const std::string before = yaml;
      yaml = std::regex_replace(yaml, std::regex(pattern), with);
      EXPECT_NE(yaml, before) << pattern;
    }
    target_file_ = (*dir_ / ("slow" + std::to_string(++targets_) + ".yaml")).string();
    testing::write_bytes(target_file_, yaml);
    options_.settings["target"] = target_file_;
  }

  // Wall time of `frames` frames run from `threads` threads at once (frames / threads each).
  double run_ms(Backend& sim, int threads, int frames) {
    const auto in = inputs();
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&] {
        for (int f = 0; f < frames / threads; ++f) sim.run(in);
      });
    for (auto& t : pool) t.join();
    return ms_since(start);
  }

  std::unique_ptr<Backend> loaded(const BackendOptions& options) {
    auto backend = make_backend("sim", options);
    backend->load(model_);
    return backend;
  }

  std::vector<QTensor> inputs(std::uint64_t seed = 1) {
    std::vector<QTensor> in;
    for (const auto& spec : input_specs(model_))
      in.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, seed));
    return in;
  }

  std::optional<testing::ScratchDir> dir_{std::in_place};
  int targets_ = 0;
  std::string target_file_;
  BackendOptions options_;
  Graph model_ = small_model();
};

TEST_F(SimBackendTest, IsRegisteredByName) {
  const auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "sim"), names.end());
  EXPECT_EQ(make_backend("sim", options_)->name(), "sim");
}

TEST_F(SimBackendTest, AFrameTakesTheModeledLatency) {
  auto sim = loaded(options_);
  const Prediction& p = sim_prediction(*sim);
  EXPECT_NEAR(p.dpu_ms, 10.0, 0.5);   // one DPU subgraph launch + a tiny conv
  EXPECT_NEAR(p.host_ms, 40.0, 0.1);  // the fixed 40 ms and the copies of 2 KB
  EXPECT_GT(p.net_ms, 0.0);           // a worker's tensors cross TCP
  EXPECT_NEAR(p.worker_ms, p.dpu_ms + p.cpu_ms + p.host_ms, 1e-9);
  const double elapsed = run_ms(*sim, 1, 3);
  EXPECT_GE(elapsed, 3 * p.worker_ms);
  EXPECT_LT(elapsed, 3 * p.worker_ms + 100.0);  // scheduling slack on a busy machine
}

// The host section's time is waited out on top of the DPU's: the same graph with 40 ms more
// host work per frame takes 40 ms longer per frame.
TEST_F(SimBackendTest, HostTimeIsAddedToTheDpuTime) {
  use_target({{"per_frame_us: 40000", "per_frame_us: 0"}});
  auto fast = loaded(options_);
  use_target({{"per_frame_us: 40000", "per_frame_us: 40000.0"}});
  auto slow = loaded(options_);
  const double fast_ms = run_ms(*fast, 1, 3);
  const double slow_ms = run_ms(*slow, 1, 3);
  EXPECT_GE(fast_ms, 3 * sim_prediction(*fast).dpu_ms);
  EXPECT_GE(slow_ms - fast_ms, 3 * 40.0 - 30.0);  // fast may have overslept a little
  EXPECT_LT(slow_ms - fast_ms, 3 * 40.0 + 100.0);
}

// With a slow TCP stack the network thread, not the compute, sets a worker's pace.
TEST_F(SimBackendTest, TcpTimeCanBoundTheWorker) {
  use_target({{"tcp_recv_ns_per_byte: [0-9.]+", "tcp_recv_ns_per_byte: 80000"}});
  auto sim = loaded(options_);
  const Prediction& p = sim_prediction(*sim);
  EXPECT_NEAR(p.net_ms, 1024 * 80000 / 1e6 + 1024 * 3 / 1e6, 0.01);  // 1 KB in, 1 KB out
  EXPECT_DOUBLE_EQ(p.worker_ms, p.net_ms);
  const double elapsed = run_ms(*sim, 1, 2);
  EXPECT_GE(elapsed, 2 * p.net_ms);
  EXPECT_LT(elapsed, 2 * p.net_ms + 100.0);
}

// Several DPU cores serve several frames at once: four concurrent frames of 20 ms DPU
// time take 80 ms on one core and 40 ms on two.
TEST_F(SimBackendTest, SeveralCoresServeSeveralFrames) {
  use_target({{"per_subgraph_us: 10000", "per_subgraph_us: 20000"},
              {"per_frame_us: 40000", "per_frame_us: 0"}});
  auto one = loaded(options_);
  use_target({{"per_subgraph_us: 10000", "per_subgraph_us: 20000"},
              {"per_frame_us: 40000", "per_frame_us: 0"},
              {"  cores: 1 ", "  cores: 2 "}});
  auto two = loaded(options_);
  EXPECT_EQ(sim_prediction(*two).dpu_cores, 2);
  const double dpu_ms = sim_prediction(*one).dpu_ms;
  EXPECT_NEAR(dpu_ms, 20.0, 0.5);
  const double one_ms = run_ms(*one, 4, 4);
  const double two_ms = run_ms(*two, 4, 4);
  EXPECT_GE(one_ms, 4 * dpu_ms);
  EXPECT_LT(one_ms, 4 * dpu_ms + 100.0);
  EXPECT_GE(two_ms, 2 * dpu_ms);
  EXPECT_LT(two_ms, 2 * dpu_ms + 100.0);
  EXPECT_NEAR(sim_prediction(*two).frame_ms, dpu_ms / 2, 0.5);
}

TEST_F(SimBackendTest, ConcurrentFramesQueueOnOneEngine) {
  auto sim = loaded(options_);
  const Prediction& p = sim_prediction(*sim);
  const double elapsed = run_ms(*sim, 4, 4);
  // Four frames in flight: the one DPU core is busy 4 x dpu_ms, the last frame adds its
  // host time on one of the four A53 cores; much less than four one-at-a-time frames.
  const double expected = 4 * p.dpu_ms + p.cpu_ms + p.host_ms;
  EXPECT_GE(elapsed, expected);
  EXPECT_LT(elapsed, expected + 100.0);
  EXPECT_LT(elapsed, 4 * p.worker_ms);  // 80 ms against 200 ms one at a time
}

// Two fragments on one worker share its board: a frame of each at once queues for the one
// DPU core (2 x 100 ms), where two boards of their own would run both at once (100 ms).
TEST_F(SimBackendTest, FragmentsSharingABoardQueueForItsDpu) {
  use_target({{"per_subgraph_us: 10000", "per_subgraph_us: 100000"},
              {"per_frame_us: 40000", "per_frame_us: 0"}});
  const auto both_at_once = [&](Backend& a, Backend& b) {
    const auto in = inputs();
    const Clock::time_point start = Clock::now();
    std::thread other([&] { b.run(in); });
    a.run(in);
    other.join();
    return ms_since(start);
  };
  auto own_a = loaded(options_);
  auto own_b = loaded(options_);
  const double dpu_ms = sim_prediction(*own_a).dpu_ms;
  const double apart = both_at_once(*own_a, *own_b);
  EXPECT_GE(apart, dpu_ms);
  EXPECT_LT(apart, 1.7 * dpu_ms);  // slack for a busy machine, far from 2 x

  BackendOptions shared = options_;
  shared.shared = make_sim_board(resolve_target(target_file_));
  auto shared_a = loaded(shared);
  auto shared_b = loaded(shared);
  const double together = both_at_once(*shared_a, *shared_b);
  EXPECT_GE(together, 2 * dpu_ms);
  EXPECT_LT(together, 2 * dpu_ms + 100.0);
}

// A frame that waited in a worker's queue starts its modeled work when its inputs were
// ready, not when the host got round to the call: the host's own delay is not modeled time.
TEST_F(SimBackendTest, AFrameStartsWhenItsInputsWereReady) {
  auto sim = loaded(options_);
  const double worker_ms = sim_prediction(*sim).worker_ms;  // about 50 ms
  const auto in = inputs();
  const Clock::time_point ready = Clock::now() - std::chrono::milliseconds(30);
  const Clock::time_point start = Clock::now();
  sim->run_ready(in, ready);
  const double elapsed = ms_since(start);
  EXPECT_GE(elapsed, worker_ms - 31.0);
  EXPECT_LT(elapsed, worker_ms - 10.0);  // about 20 ms, far from the whole 50
  // A ready time in the future is taken as now.
  const Clock::time_point later = Clock::now();
  sim->run_ready(in, later + std::chrono::seconds(10));
  EXPECT_LT(ms_since(later), worker_ms + 100.0);
}

// A worker runs a fragment's frames one after the other. A frame that queued behind the
// previous one (inputs ready long ago) starts when that frame ended, not on a second A53
// core of the four the KV260 has: the serial worker takes worker_ms per frame, as the
// planner prices it (the main job's ConvViT, whose frames are mostly A53 work, ran 4.7x
// faster than predicted before this).
TEST_F(SimBackendTest, QueuedFramesOfOneCallerDoNotOverlap) {
  auto sim = loaded(options_);
  const double worker_ms = sim_prediction(*sim).worker_ms;  // about 50 ms, 40 of them A53
  const auto in = inputs();
  // The first frame ends no earlier than worker_ms after `before`, the second (queued since
  // long ago) worker_ms after that, however late this machine wakes either caller up;
  // overlapping them would end both near `before` + worker_ms.
  const Clock::time_point before = Clock::now();
  sim->run_ready(in, before);
  sim->run_ready(in, Clock::now() - std::chrono::seconds(1));
  EXPECT_GE(ms_since(before), 2 * worker_ms - 1.0);
}

TEST_F(SimBackendTest, OutputsHaveShapesButAreNotComputed) {
  auto sim = loaded(options_);
  const auto out = sim->run(inputs());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "conv_fix");
  EXPECT_EQ(out[0].shape, (std::vector<std::int64_t>{1, 8, 8, 16}));
  EXPECT_EQ(out[0].fix_point, 4);
  EXPECT_EQ(out[0].data.size(), 8u * 8 * 16);
  EXPECT_FALSE(out[0].computed);
}

TEST_F(SimBackendTest, SimNumericsComputesWhatRefComputes) {
  BackendOptions options = options_;
  options.settings["numerics"] = "true";
  auto sim = loaded(options);
  auto ref = make_backend("ref");
  ref->load(model_);
  const auto in = inputs(7);
  const auto expected = ref->run(in);
  const auto got = sim->run(in);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got[0].computed);
  EXPECT_EQ(got[0].data, expected[0].data);
  EXPECT_EQ(sha256_hex(got[0].data), sha256_hex(expected[0].data));

  // An input that was never computed taints the outputs, numerics or not.
  auto tainted = in;
  tainted[0].computed = false;
  EXPECT_FALSE(sim->run(tainted)[0].computed);
}

TEST_F(SimBackendTest, BadInputsAndTargetsAreErrors) {
  auto sim = loaded(options_);
  auto in = inputs();
  in[0].shape = {1, 8, 8, 8};
  try {
    sim->run(in);
    FAIL() << "wrong shape accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x_fix"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sim->run({}), Error);
  BackendOptions bad = options_;
  bad.settings["target"] = "nowhere";
  EXPECT_THROW(loaded(bad), Error);
  EXPECT_THROW(make_backend("sim", options_)->run(inputs()), Error);  // run before load
}

}  // namespace
}  // namespace dpushard
