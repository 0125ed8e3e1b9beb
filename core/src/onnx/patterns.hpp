#pragma once
// Fusion of the decomposed forms torch.onnx.export writes into single nodes the
// converter maps directly:
//   LayerNormalization  <- ReduceMean, Sub, Pow(2), ReduceMean, Add(eps), Sqrt, Div
//                          [, Mul(gamma)] [, Add(beta)]   (opsets before 17)
//   Gelu                <- Div(sqrt 2) | Mul(1/sqrt 2), Erf, Add(1), Mul(x), Mul(0.5)
//   HardSwish           <- Mul(x, HardSigmoid(x))          (opsets before 14)

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "node.hpp"

namespace dpushard::onnximport {

// Looks up a constant tensor by name (initializer or Constant node output), or null.
using ConstLookup = std::function<const ConstTensor*(const std::string&)>;

// Returns the nodes with every matched pattern replaced by one node standing where the
// pattern's last node stood (so all its inputs are defined before it).
std::vector<Node> fuse_patterns(std::vector<Node> nodes, const ConstLookup& constant,
                                const std::set<std::string>& graph_outputs);

}  // namespace dpushard::onnximport
