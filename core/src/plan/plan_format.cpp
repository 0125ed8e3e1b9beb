// The plan format's own helpers (dpushard/plan/plan_format.hpp).
#include "dpushard/plan/plan_format.hpp"

#include "dpushard/plan/strategy_table.hpp"

namespace dpushard {

std::int64_t PlanTensor::element_count() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

const PlanFragment& Plan::fragment(std::string_view name) const {
  for (const auto& f : fragments)
    if (f.name == name) return f;
  throw Error("plan: no fragment named '" + std::string(name) + "'");
}

std::vector<std::uint32_t> replica_cycle(const std::vector<int>& share) {
  std::int64_t total = 0;
  for (int w : share) total += w;
  std::vector<std::uint32_t> cycle;
  std::vector<std::int64_t> credit(share.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::size_t pick = 0;
    for (std::size_t r = 0; r < share.size(); ++r) {
      credit[r] += share[r];
      if (credit[r] > credit[pick]) pick = r;  // ties: the lower replica
    }
    credit[pick] -= total;
    cycle.push_back(static_cast<std::uint32_t>(pick));
  }
  return cycle;
}

std::string plan_label(const std::string& strategy, int replicas,
                       const std::string& inner_strategy) {
  if (!strategy_is_composite(strategy) || replicas < 1 || inner_strategy.empty()) return strategy;
  if (replicas == 1) return strategy + " " + inner_strategy;
  return strategy + " " + std::to_string(replicas) + "x " + inner_strategy;
}

std::string PlanCandidate::label() const { return plan_label(strategy, replicas, inner_strategy); }

}  // namespace dpushard
