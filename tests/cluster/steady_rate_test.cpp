// steady_rate: the window's fill is left out, so frames finishing together on several nodes
// are not counted as free.

#include <gtest/gtest.h>

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
  const double three = steady_rate(completions(27, 3, milliseconds(45)), 6);
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

}  // namespace
}  // namespace dpushard::cluster
