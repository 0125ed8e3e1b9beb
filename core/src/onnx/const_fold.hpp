#pragma once
// Evaluates ONNX nodes whose inputs are all constants: the shape arithmetic torch exports
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Expand of parameters, ...) and
// simple arithmetic on weights.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "const_tensor.hpp"
#include "node.hpp"

namespace dpushard::onnximport {

bool is_foldable_type(std::string_view type);

// The indices a Slice with (start, end, step) takes from a dimension of size `dim`.
std::vector<std::int64_t> slice_indices(std::int64_t dim, std::int64_t start, std::int64_t end,
                                        std::int64_t step, const std::string& who);

// A Reshape node's target shape with 0 (copy, unless allowzero) and -1 resolved.
Shape reshape_target(const Node& n, const Shape& in_shape, std::vector<std::int64_t> target);

// The node's outputs; `inputs[i]` is null for an omitted optional input. Throws naming the
// node when an attribute or input is out of range.
std::vector<ConstTensor> fold_node(const Node& n, const std::vector<const ConstTensor*>& inputs,
                                   std::int64_t opset);

}  // namespace dpushard::onnximport
