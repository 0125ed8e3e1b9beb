#pragma once
// The steady-state rate of a stream of frames from their completion times.

#include <chrono>
#include <cstdint>
#include <vector>

#include "dpushard/cluster/cluster.hpp"

namespace dpushard::cluster {

// MLPerf LoadGen's Server arrivals: `frames` offsets from the stream's start of a Poisson
// process of `rate` frames per second (exponential gaps, seeded: the same seed gives the
// same schedule).
std::vector<std::chrono::steady_clock::duration> poisson_arrivals(double rate, std::uint64_t frames,
                                                                  std::uint64_t seed);

// Frames per second with the window full, from whole cycles of the frame order: the
// completions after the fill (the first `inflight` frames, launched together at the start,
// which finish together on different nodes) rounded up to a whole cycle, to the end of the
// last whole cycle before the drain (below). Counting from the first completion charged
// the other nodes' first frames to no time (a 3-node replicate run of 27 frames read 8 %
// faster than 3 nodes can be); starting right after the inflight-th
// completion, with replicas finishing in batches, started mid-batch and counted the rest of
// that batch as free (4 replicas, 6 in flight, 16 frames: 1.25x what they can do). The
// drain is left out the same way: the window ends at the last completion the full window
// preceded (the (n - inflight + 1)-th), as whole cycles from the first; the last frames,
// finishing with the window emptying, do not wait for frames behind them (a 3-node experts
// plan whose tail shares a board with an expert read 5 % above that board's capacity). With
// too few completions for the fill, one whole cycle and the drain, the window runs to the
// last completion; with too few for the fill and one whole cycle, the cycle is 1 and the
// fill at most the first half of them; with fewer than 2, 0. Over that window the rate is
// the least-squares slope through the ends of its whole cycles (all of them, not the first
// and last alone: one completion late or early at an end of n evenly spaced points moves the
// rate by 6 (n - 1) / (n (n + 1)) of what it moves the rate between the two ends, a third at
// 16 points). `completions` need not be sorted.
double steady_rate(std::vector<std::chrono::steady_clock::time_point> completions, int inflight,
                   int cycle = 1);

// The run's own spread of its steady rate: the window of steady_rate split at its middle
// cycle end, each half's least-squares rate r1, r2, and |r1 - r2| / (r1 + r2) (how far each
// half lies from their mean, relative to it). 0 when the window has fewer than two whole
// cycles a half. A load that came or went during the run shows here; a steady load does not.
double steady_rate_spread(std::vector<std::chrono::steady_clock::time_point> completions,
                          int inflight, int cycle = 1);

// The same for a median: `values` in the order they were taken, split into halves, each
// half's median m1, m2, and |m1 - m2| / (m1 + m2); 0 for fewer than 4 values.
double median_spread(const std::vector<double>& values);

}  // namespace dpushard::cluster
