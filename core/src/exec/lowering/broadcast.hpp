#pragma once
// Elementwise iteration over an output shape with inputs broadcast to it (numpy rules:
// shapes right-aligned, each input dimension equal to the output's or 1). The counters
// live in the object, so a frame allocates nothing.

#include <cstdint>
#include <vector>

#include "program.hpp"

namespace dpushard::lowering {

class Broadcast {
 public:
  // Throws naming `op` when an input shape does not broadcast to `out_shape`.
  Broadcast(const Op& op, std::vector<std::int64_t> out_shape,
            const std::vector<std::vector<std::int64_t>>& input_shapes);

  // Calls f(out_index, offsets) for every output element in order; offsets[j] is the
  // element of input j that lands there.
  template <typename F>
  void for_each(F&& f) {
    const std::size_t rank = out_shape_.size();
    std::fill(counters_.begin(), counters_.end(), 0);
    std::fill(offsets_.begin(), offsets_.end(), 0);
    for (std::int64_t i = 0; i < total_; ++i) {
      f(i, offsets_.data());
      for (std::size_t d = rank; d-- > 0;) {
        ++counters_[d];
        for (std::size_t j = 0; j < offsets_.size(); ++j) offsets_[j] += strides_[j][d];
        if (counters_[d] < out_shape_[d]) break;
        for (std::size_t j = 0; j < offsets_.size(); ++j)
          offsets_[j] -= strides_[j][d] * out_shape_[d];
        counters_[d] = 0;
      }
    }
  }

 private:
  std::vector<std::int64_t> out_shape_;
  std::int64_t total_ = 0;
  std::vector<std::vector<std::int64_t>> strides_;  // per input, per output dimension
  std::vector<std::int64_t> counters_;
  std::vector<std::int64_t> offsets_;
};

}  // namespace dpushard::lowering
