// steady_rate: the window's fill is left out and whole cycles of the frame order counted, so
// frames finishing together on several nodes are not counted as free.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cluster/steady_rate.hpp"

namespace dpushard::cluster {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// `frames` completions of `nodes` nodes each taking `period` per frame, all started at 0.
std::vector<Clock::time_point> completions(int frames, int nodes, milliseconds period) {
  std::vector<Clock::time_point> at;
  const Clock::time_point start{};
  for (int i = 0; i < frames; ++i) at.push_back(start + period * (i / nodes + 1));
  return at;
}

TEST(SteadyRate, ThreeReplicasAreThreeTimesOneNotMore) {
  // 45 ms a frame: one node 22.2 fps, three 66.7. From the first completion the three
  // replicas of 27 frames read 26 / (8 * 45 ms) = 72.2 fps, 8 % above what they can do.
  const double one = steady_rate(completions(27, 1, milliseconds(45)), 6);
  // The plan's frame cycle (3 replicas: 3) keeps the window on whole batches at both ends.
  const double three = steady_rate(completions(27, 3, milliseconds(45)), 6, 3);
  EXPECT_NEAR(one, 1000.0 / 45, 1e-9);
  EXPECT_NEAR(three, 3000.0 / 45, 1e-9);
}

TEST(SteadyRate, AShortStreamLeavesOutHalfAndTooShortHasNone) {
  EXPECT_NEAR(steady_rate(completions(4, 1, milliseconds(10)), 6), 2 / 0.020, 1e-9);
  EXPECT_EQ(steady_rate(completions(1, 1, milliseconds(10)), 6), 0.0);
  EXPECT_EQ(steady_rate({}, 6), 0.0);
  // One frame in flight: the rate after the first completion, as before.
  EXPECT_NEAR(steady_rate(completions(5, 1, milliseconds(10)), 1), 4 / 0.040, 1e-9);
}

// A replay of the orchestrator's rules: `inflight` frames in flight (a frame launches when
// one completes), frame f on replica f mod `replicas`, each replica running its frames one
// after the other in `period` (plus `skew` x r for replica r's first frame, so replicas
// need not finish in lockstep). Returns the completion times in completion order.
std::vector<Clock::time_point> replay(std::size_t frames, std::size_t replicas,
                                      std::size_t inflight, milliseconds period,
                                      std::chrono::microseconds skew = {}) {
  std::vector<Clock::time_point> free_at(replicas, Clock::time_point{});
  for (std::size_t r = 0; r < replicas; ++r) free_at[r] += skew * static_cast<int>(r);
  std::vector<Clock::time_point> finish;
  for (std::size_t f = 0; f < frames; ++f) {
    // Launched at the start, or when the (f - inflight)-th completion frees a slot.
    Clock::time_point launch{};
    if (f >= inflight) {
      std::vector<Clock::time_point> sorted = finish;
      std::sort(sorted.begin(), sorted.end());
      launch = sorted[f - inflight];
    }
    const std::size_t r = f % replicas;
    const Clock::time_point start = std::max(launch, free_at[r]);
    finish.push_back(start + period);
    free_at[r] = finish.back();
  }
  std::sort(finish.begin(), finish.end());
  return finish;
}

TEST(SteadyRate, OneLateCompletionAtAnEndOfTheWindowMovesTheRateLittle) {
  // 100 fps, one frame in flight; the window's first completion is 3 ms late (a scheduling
  // hiccup). From the first and last completion alone the rate reads (n - 1) frames over 3 ms
  // less; the least-squares slope through every completion moves by 6 (n - 1) / (n (n + 1))
  // of that (an end point's leverage on the slope of n evenly spaced points): a third at 16
  // frames, a seventh at 40.
  for (int frames : {16, 40}) {
    auto at = completions(frames, 1, milliseconds(10));
    at[0] += std::chrono::microseconds(3000);
    const double two_point =
        (frames - 1) / std::chrono::duration<double>(at.back() - at.front()).count();
    const double rate = steady_rate(at, 1);
    EXPECT_GT(two_point, 100 * 1.005) << frames << " frames";
    const double leverage = 6.0 * (frames - 1) / (frames * (frames + 1.0));
    EXPECT_LT(std::fabs(rate / 100 - 1), 1.1 * leverage * (two_point / 100 - 1))
        << frames << " frames";
    EXPECT_LT(leverage, frames == 16 ? 0.34 : 0.15);
  }
  // Evenly spaced completions: the slope is exactly the rate, as from the two ends.
  EXPECT_NEAR(steady_rate(completions(40, 1, milliseconds(10)), 1), 100, 1e-9);
}

TEST(SteadyRate, TheRunsOwnSpreadIsItsHalvesApart) {
  // An even stream: both halves of the window read the same rate.
  EXPECT_NEAR(steady_rate_spread(completions(40, 1, milliseconds(10)), 1), 0, 1e-9);
  // A load that came halfway: 10 ms a frame, then 11 ms. The halves read 100 and 90.9 fps,
  // |100 - 90.9| / (100 + 90.9) = 4.8 %.
  std::vector<Clock::time_point> at;
  Clock::time_point t{};
  for (int i = 0; i < 41; ++i) {
    t += milliseconds(i < 20 ? 10 : 11);
    at.push_back(t);
  }
  EXPECT_NEAR(steady_rate_spread(at, 1), (1000.0 / 10 - 1000.0 / 11) / (100 + 1000.0 / 11), 1e-3);
  // Too short for two whole cycles a half: no spread to tell.
  EXPECT_EQ(steady_rate_spread(completions(4, 1, milliseconds(10)), 1), 0.0);
  // Replicas in batches (cycle 4): whole cycles a half, an even stream reads 0.
  EXPECT_NEAR(steady_rate_spread(completions(48, 4, milliseconds(45)), 6, 4), 0, 1e-9);
  // The median latencies of the first and second half of the frames.
  EXPECT_NEAR(median_spread({10, 10, 10, 10, 11, 11, 11, 11}), 1.0 / 21, 1e-12);
  EXPECT_NEAR(median_spread({10, 30, 10, 10, 10, 10, 10, 30}), 0, 1e-12);  // outliers: none
  EXPECT_EQ(median_spread({10, 11, 12}), 0.0);
}

TEST(SteadyRate, FourReplicasFinishingInBatchesAreFourTimesOneNotMore) {
  // 45 ms a frame: 4 replicas can do 88.9 fps. With 6 in flight they finish in batches of
  // 4; starting the window after the 6th completion starts it mid-batch and counts the rest
  // of that batch as free: 16 frames read 1.25x, 27 frames 1.05x, 64 frames 1.04x.
  const double capacity = 4000.0 / 45;
  for (std::size_t frames : {16u, 27u, 64u}) {
    const auto at = replay(frames, 4, 6, milliseconds(45));
    EXPECT_NEAR(steady_rate(at, 6, 4), capacity, 1e-6 * capacity) << frames << " frames";
    // The old rule (from the 6th completion to the last) on the same completions: above
    // what 4 replicas can do.
    const double old_rule =
        static_cast<double>(frames - 6) / std::chrono::duration<double>(at.back() - at[5]).count();
    EXPECT_GT(old_rule, 1.03 * capacity) << frames << " frames";
  }
}

TEST(SteadyRate, FourSkewedReplicasStayAtTheirCapacity) {
  // Replicas out of phase (each 3 ms behind the one before): still whole cycles, within 2 %.
  const double capacity = 4000.0 / 45;
  for (std::size_t frames : {16u, 27u, 64u}) {
    const auto at = replay(frames, 4, 8, milliseconds(45), std::chrono::microseconds(3000));
    const double rate = steady_rate(at, 8, 4);
    EXPECT_LE(rate, 1.02 * capacity) << frames << " frames";
    EXPECT_GE(rate, 0.9 * capacity) << frames << " frames";
  }
}

// A replay of the CNN 100M experts plan on 3 nodes as the sim backend runs it: node 1 holds
// an expert (DPU 20.89 ms, then 0.39 ms on an A53 core) and the tail (DPU 0.81 ms, A53
// 0.85 ms), one DPU core shared in the order the fragments ask for it (SimBoard); the other
// experts, on nodes of their own, are faster and never hold a frame back. The tail's call for
// frame f comes 1.2 ms after the expert's end (the link), when the expert has already taken
// the DPU for frame f + 1: every tail waits behind an expert frame, except the last frame's,
// which has none to wait behind. `inflight` frames in flight; completion times, sorted.
std::vector<Clock::time_point> replay_experts_with_tail(std::size_t frames, std::size_t inflight) {
  using us = std::chrono::microseconds;
  const us expert_dpu(20890), expert_a53(390), tail_dpu(810), tail_a53(850), link(1200);
  struct Call {
    Clock::time_point at;
    bool tail;
    std::size_t frame;
  };
  std::vector<Call> pending;
  std::vector<Clock::time_point> launch(frames), expert_end(frames), done;
  std::vector<bool> launched(frames, false);
  Clock::time_point dpu_free{};
  std::size_t next_expert = 0;  // the expert's next frame, called once it is free and launched
  bool expert_busy = false;
  auto call_expert = [&](Clock::time_point free_at) {
    if (expert_busy || next_expert >= frames || !launched[next_expert]) return;
    pending.push_back({std::max(free_at, launch[next_expert]), false, next_expert});
    ++next_expert;
    expert_busy = true;
  };
  for (std::size_t f = 0; f < std::min(frames, inflight); ++f) launched[f] = true;
  call_expert(Clock::time_point{});
  while (!pending.empty()) {
    const auto it = std::min_element(pending.begin(), pending.end(),
                                     [](const Call& a, const Call& b) { return a.at < b.at; });
    const Call c = *it;
    pending.erase(it);
    const Clock::time_point start = std::max(c.at, dpu_free);
    dpu_free = start + (c.tail ? tail_dpu : expert_dpu);
    const Clock::time_point end = dpu_free + (c.tail ? tail_a53 : expert_a53);
    if (!c.tail) {
      expert_end[c.frame] = end;
      expert_busy = false;
      pending.push_back({end + link, true, c.frame});
      call_expert(end);
    } else {
      done.push_back(end);  // completion k launches frame k + inflight
      const std::size_t f = done.size() - 1 + inflight;
      if (f < frames) {
        launch[f] = end;
        launched[f] = true;
        call_expert(expert_end[next_expert - 1]);
      }
    }
  }
  std::sort(done.begin(), done.end());
  return done;
}

TEST(SteadyRate, TheDrainIsLeftOutLikeTheFill) {
  // The board's DPU does 20.89 + 0.81 ms per frame: 46.08 fps at most. The main job's 24
  // frames, 6 in flight, counted to the last completion read 48.6 fps (3.09x on 3 nodes,
  // struck out as above what the busiest node allows): the last frame's tail did not wait
  // behind an expert frame. Counted to the last completion the full window preceded, the
  // rate is the board's.
  const double capacity = 1000.0 / 21.70;
  for (std::size_t frames : {24u, 29u, 40u}) {
    const auto at = replay_experts_with_tail(frames, 6);
    ASSERT_EQ(at.size(), frames);
    EXPECT_NEAR(steady_rate(at, 6), capacity, 0.005 * capacity) << frames << " frames";
    // The last completion is early: from the same fill to it, the rate reads high (one
    // expert frame short over the window: 5 % at the main job's 24 frames).
    const double to_last =
        static_cast<double>(frames - 6) / std::chrono::duration<double>(at.back() - at[5]).count();
    EXPECT_GT(to_last, (frames == 24 ? 1.04 : 1.02) * capacity) << frames << " frames";
  }
}

TEST(SteadyRate, TheCycleIsThePlansFrameOrder) {
  Plan plan;
  PlanFragment model;
  model.nodes = {0, 1, 2, 3};
  plan.fragments.push_back(model);
  EXPECT_EQ(frame_cycle(plan), 4);  // replicate: its copies
  plan.frame_share = {1, 1, 2, 1};
  EXPECT_EQ(frame_cycle(plan), 5);  // weighted shares: one cycle of replica_cycle
  Plan experts;
  for (int node = 0; node < 3; ++node) {
    PlanFragment f;
    f.nodes = {node};
    experts.fragments.push_back(f);
  }
  EXPECT_EQ(frame_cycle(experts), 1);
  Plan hybrid;  // 2 replicas of a 2-node plan: every fragment on one node per replica
  for (int node = 0; node < 2; ++node) {
    PlanFragment f;
    f.nodes = {node, node + 2};
    hybrid.fragments.push_back(f);
  }
  EXPECT_EQ(frame_cycle(hybrid), 2);
}

TEST(SteadyRate, AShortStreamFallsBackToThePlainRule) {
  // Fewer completions than two cycles: cycle 1, the fill at most half of them.
  const auto at = completions(6, 4, milliseconds(10));  // batches at 10 ms and 20 ms
  EXPECT_GT(steady_rate(at, 6, 4), 0.0);
  EXPECT_EQ(steady_rate(at, 6, 4), steady_rate(at, 6, 1));
}

TEST(ServerArrivals, APoissonProcessOfTheRateTheSameForTheSameSeed) {
  const auto at = poisson_arrivals(200, 4000, 7);
  ASSERT_EQ(at.size(), 4000u);
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  // 4000 exponential gaps of mean 5 ms: their mean within 5 % (4.7 sigma), and their spread
  // that of an exponential (standard deviation = mean), not a fixed period.
  const double total = std::chrono::duration<double>(at.back()).count();
  EXPECT_NEAR(total / 4000, 0.005, 0.005 * 0.05);
  double ss = 0;
  auto previous = Clock::duration::zero();
  for (const auto t : at) {
    const double g = std::chrono::duration<double>(t - previous).count() - total / 4000;
    ss += g * g;
    previous = t;
  }
  EXPECT_NEAR(std::sqrt(ss / 3999), 0.005, 0.005 * 0.1);
  EXPECT_EQ(poisson_arrivals(200, 4000, 7), at);
  EXPECT_NE(poisson_arrivals(200, 4000, 8), at);
  EXPECT_TRUE(poisson_arrivals(0, 10, 7).empty());
}

}  // namespace
}  // namespace dpushard::cluster
