#include "broadcast.hpp"

#include <algorithm>

namespace dpushard::lowering {

Broadcast::Broadcast(const Op& op, std::vector<std::int64_t> out_shape,
                     const std::vector<std::vector<std::int64_t>>& input_shapes)
    : out_shape_(std::move(out_shape)),
      total_(element_count(out_shape_)),
      counters_(out_shape_.size(), 0),
      offsets_(input_shapes.size(), 0) {
  const std::size_t rank = out_shape_.size();
  for (const auto& shape : input_shapes) {
    if (shape.size() > rank)
      fail(op, "input " + shape_text(shape) + " has more dimensions than output " +
                   shape_text(out_shape_));
    std::vector<std::int64_t> strides(rank, 0);
    std::int64_t stride = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const std::size_t in_dim = shape.size() - 1 - i;
      const std::size_t out_dim = rank - 1 - i;
      if (shape[in_dim] == out_shape_[out_dim])
        strides[out_dim] = out_shape_[out_dim] == 1 ? 0 : stride;
      else if (shape[in_dim] != 1)
        fail(op, "input " + shape_text(shape) + " does not broadcast to output " +
                     shape_text(out_shape_));
      stride *= shape[in_dim];
    }
    strides_.push_back(std::move(strides));
  }
}

}  // namespace dpushard::lowering
