// The sim backend: frames complete after the modeled time (steady clock), concurrent frames
// queue on the one modeled engine, outputs are marked not computed unless sim_numerics.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "dpushard/backend.hpp"
#include "dpushard/builder.hpp"
#include "dpushard/error.hpp"
#include "dpushard/sim_backend.hpp"
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
    register_sim_backend();
    std::string yaml(builtin_target_yaml("kv260"));
    yaml =
        std::regex_replace(yaml, std::regex("per_subgraph_us: [0-9.]+"), "per_subgraph_us: 10000");
    yaml = std::regex_replace(yaml, std::regex("per_frame_us: [0-9.]+"), "per_frame_us: 40000");
    target_file_ = (*dir_ / "slow.yaml").string();
    testing::write_bytes(target_file_, yaml);
    options_.sim_target = target_file_;
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
  EXPECT_NEAR(p.frame_ms, 10.0, 0.5);  // one DPU subgraph launch + a tiny conv
  EXPECT_NEAR(p.latency_ms, p.frame_ms + 40.0, 1e-9);
  const auto in = inputs();
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < 3; ++i) sim->run(in);
  const double elapsed = ms_since(start);
  EXPECT_GE(elapsed, 3 * p.latency_ms);
  EXPECT_LT(elapsed, 3 * p.latency_ms + 100.0);  // scheduling slack on a busy machine
}

TEST_F(SimBackendTest, ConcurrentFramesQueueOnOneEngine) {
  auto sim = loaded(options_);
  const Prediction& p = sim_prediction(*sim);
  const auto in = inputs();
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { sim->run(in); });
  for (auto& t : threads) t.join();
  const double elapsed = ms_since(start);
  // Four frames in flight: the engine is busy 4 x frame_ms, the last one adds its host time;
  // much less than four one-at-a-time latencies.
  EXPECT_GE(elapsed, 4 * p.frame_ms + p.host_ms);
  EXPECT_LT(elapsed, 4 * p.frame_ms + p.host_ms + 100.0);
  EXPECT_LT(elapsed, 4 * p.latency_ms);  // 80 ms against 200 ms one at a time
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
  options.sim_numerics = true;
  auto sim = loaded(options);
  auto ref = make_backend("ref");
  ref->load(model_);
  const auto in = inputs(7);
  const auto expected = ref->run(in);
  const auto got = sim->run(in);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got[0].computed);
  EXPECT_EQ(got[0].data, expected[0].data);
  EXPECT_EQ(sha256_hex(got[0]), sha256_hex(expected[0]));

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
  bad.sim_target = "nowhere";
  EXPECT_THROW(loaded(bad), Error);
  EXPECT_THROW(make_backend("sim", options_)->run(inputs()), Error);  // run before load
}

}  // namespace
}  // namespace dpushard
