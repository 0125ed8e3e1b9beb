#pragma once
// Int8 tensors as they travel between fragments and nodes: NHWC values with one
// power-of-two scale.

#include <cstdint>
#include <string>
#include <vector>

namespace dpushard {

struct QTensor {
  std::string name;                 // the op that produced it (a fix op in `_int` graphs)
  std::vector<std::int64_t> shape;  // NHWC for feature maps
  int fix_point = 0;                // value = q * 2^-fix_point
  std::vector<std::int8_t> data;
  // False when a timing-only backend (sim without numerics) produced it: the shape is right,
  // the values are zeros, and no hash of it may be claimed.
  bool computed = true;

  std::int64_t element_count() const;
  bool operator==(const QTensor&) const = default;
};

// Deterministic uniform int8 values for a tensor of `shape`, from `seed` and `name`.
QTensor random_qtensor(std::string name, std::vector<std::int64_t> shape, int fix_point,
                       std::uint64_t seed);

}  // namespace dpushard
