// The strategies' planners by name (strategies.hpp). The list itself is generated from the
// strategy_*.cpp files here (strategy_planners.cpp.in).
#include "dpushard/base/error.hpp"
#include "strategies.hpp"

namespace dpushard::split {

std::vector<Proposal> one_proposal(std::optional<Partition> p, std::string why_not) {
  std::vector<Proposal> out(1);
  out.front().partition = std::move(p);
  out.front().why_not = std::move(why_not);
  return out;
}

const StrategyPlanner& planner_for(std::string_view name) {
  for (const StrategyPlanner& planner : strategy_planners())
    if (planner.name == name) return planner;
  throw Error("split: internal: the strategy '" + std::string(name) +
              "' has no planner (core/src/split/strategy_<name>.cpp)");
}

}  // namespace dpushard::split
