#include "strategies.hpp"

namespace dpushard::split {

Partition plan_replicate(const StrategyInput& in) {
  std::vector<int> nodes;
  for (int k = 0; k < in.nodes; ++k) nodes.push_back(k);
  Partition p = whole_model(in.graph, "replicate", nodes);
  p.structure = "every node runs the whole model";
  return p;
}

}  // namespace dpushard::split
