// Replicate: every node runs the whole model, a board with several DPU cores (mixed boards)
// a copy per core. On boards of unequal speed each copy takes frames in proportion to its
// board's speed (frame_share), so a fast board is not held to the pace of the slowest one.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "strategies.hpp"

namespace dpushard::split {
namespace {

constexpr int kMaxCycle = 1024;  // frames in one cycle (plan_check's bound)

// Small integer shares in proportion to `speed`: the first multiple q of the slowest board's
// share whose shares are all within 2 % of exact, at most kMaxCycle frames a cycle.
std::vector<int> shares_for(const std::vector<double>& speed) {
  const double slowest = *std::min_element(speed.begin(), speed.end());
  const double total = std::accumulate(speed.begin(), speed.end(), 0.0);
  std::vector<int> best;
  for (int q = 1; q <= 64; ++q) {
    std::vector<int> w;
    int sum = 0;
    for (double s : speed) {
      w.push_back(std::max(1, static_cast<int>(std::lround(q * s / slowest))));
      sum += w.back();
    }
    if (sum > kMaxCycle) break;
    best = w;
    double worst = 0;
    for (std::size_t n = 0; n < speed.size(); ++n) {
      const double exact = speed[n] / total;
      worst = std::max(worst, std::abs(w[n] / static_cast<double>(sum) - exact) / exact);
    }
    if (worst < 0.02) break;
  }
  int g = 0;
  for (int w : best) g = std::gcd(g, w);
  for (int& w : best) w /= std::max(g, 1);
  return best;
}

std::vector<Proposal> propose_replicate(const StrategyInput& in) {
  std::vector<int> listed(static_cast<std::size_t>(in.nodes));
  std::iota(listed.begin(), listed.end(), 0);
  // A node with several DPU cores runs a copy per core (each copy takes one frame at a time).
  const std::vector<int> nodes = node_slots(in, listed);
  std::vector<double> speed;
  for (int n : nodes) speed.push_back(in.speed_of(n));
  Partition p = whole_model(in.graph, "replicate", nodes);
  p.structure = "every node runs the whole model";
  if (nodes.size() != listed.size())
    p.structure += " (a copy per DPU core: " + std::to_string(nodes.size()) + " copies)";
  if (std::adjacent_find(speed.begin(), speed.end(), std::not_equal_to<>()) != speed.end())
    p.frame_share = shares_for(speed);
  if (!p.frame_share.empty()) {  // more than 1024 copies get no shares: equal ones
    std::string shares;
    for (int w : p.frame_share) shares += (shares.empty() ? "" : ":") + std::to_string(w);
    p.structure += ", frames shared " + shares + " by the boards' speed";
  }
  return one_proposal(std::move(p));
}

}  // namespace

StrategyPlanner strategy_replicate() { return {"replicate", &propose_replicate}; }

}  // namespace dpushard::split
