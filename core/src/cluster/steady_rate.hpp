#pragma once
// The steady-state rate of a stream of frames from their completion times.

#include <chrono>
#include <vector>

namespace dpushard::cluster {

// Frames per second with the window full: the completions after the first `inflight` (the
// fill: frames launched together at the start, which finish together on different nodes),
// over the time since the inflight-th completion. Counting from the first completion
// instead charged the other nodes' first frames to no time, which made a 3-node replicate
// run of 27 frames look 8 % faster than 3 nodes can be. With fewer than 2 * inflight
// completions the fill is the first half of them; with fewer than 2, 0.
double steady_rate(const std::vector<std::chrono::steady_clock::time_point>& completions,
                   int inflight);

}  // namespace dpushard::cluster
