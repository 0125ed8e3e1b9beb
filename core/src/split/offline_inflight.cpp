// How many frames in flight saturate a plan, from its prediction (split.hpp).

#include <algorithm>
#include <cmath>

#include "dpushard/split/split.hpp"

namespace dpushard {

int offline_inflight(const Plan& plan) {
  const double busy = plan.predicted.throughput_fps * plan.predicted.latency_ms / 1000.0;
  // Twice Little's law: on each leg of a frame's path (the head node's port, a node's
  // compute, the link back) one frame at work and one waiting, so a late timer or transfer
  // does not leave the bottleneck idle; once gave the 1M CNN on one node 4 frames and 90 %
  // of its rate.
  const double frames = (busy > 0 && std::isfinite(busy) ? std::ceil(2 * busy) : 1.0) +
                        static_cast<double>(std::max(plan.nodes, 1));
  return static_cast<int>(std::clamp(frames, 2.0, 4096.0));
}

}  // namespace dpushard
