#pragma once
// Static cost of ops and graphs: parameters, multiply-accumulates, bytes of weights and
// of activations (int8 on the DPU, so one byte per element).

#include <cstdint>
#include <map>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

struct OpCost {
  std::int64_t params = 0;            // weight + bias elements owned by this op
  std::int64_t macs = 0;              // multiply-accumulates per frame
  std::int64_t weight_bytes = 0;      // int8 bytes of those params
  std::int64_t activation_bytes = 0;  // int8 bytes of the output tensor
};

struct GraphCost {
  std::int64_t params = 0;
  std::int64_t macs = 0;
  std::int64_t weight_bytes = 0;
  std::int64_t activation_bytes = 0;
  std::map<std::string, std::int64_t> ops_by_type;  // op type -> count
};

OpCost op_cost(const Graph& graph, const Op& op);
GraphCost graph_cost(const Graph& graph);

}  // namespace dpushard
