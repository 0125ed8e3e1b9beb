#pragma once
// Constant tensors of an ONNX graph (initializers, Constant nodes and everything folded
// from them), held in ONNX layout. Values are doubles: exact for float32 weights and for
// the int64 shape arithmetic torch.onnx.export emits.

#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/graph/shape.hpp"

namespace onnx {
class TensorProto;
}

namespace dpushard::onnximport {

using Shape = std::vector<std::int64_t>;

struct ConstTensor {
  Shape shape;  // empty = scalar
  std::vector<double> values;
  bool integer = false;  // int/bool data (shape arithmetic), not weights

  std::int64_t count() const;
  double scalar(const std::string& who) const;  // the single value, or throws naming `who`
  std::vector<std::int64_t> ints() const;       // values as integers
  std::vector<float> floats() const;
};

// Decodes an initializer or Constant value; `who` names it in errors.
ConstTensor from_tensor_proto(const onnx::TensorProto& tensor, const std::string& who);

ConstTensor make_ints(const std::vector<std::int64_t>& values);
ConstTensor make_scalar(double value, bool integer);

// Numpy broadcasting of two shapes; throws naming `who` when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& who);
// The tensor broadcast to `shape` (a copy).
ConstTensor broadcast_to(const ConstTensor& t, const Shape& shape, const std::string& who);
// out[i] = f(a[i], b[i]) with numpy broadcasting.
template <typename F>
ConstTensor binary(const ConstTensor& a, const ConstTensor& b, const std::string& who, F f) {
  const Shape shape = broadcast_shapes(a.shape, b.shape, who);
  const ConstTensor x = broadcast_to(a, shape, who);
  const ConstTensor y = broadcast_to(b, shape, who);
  ConstTensor out{shape, std::vector<double>(x.values.size()), a.integer && b.integer};
  for (std::size_t i = 0; i < out.values.size(); ++i) out.values[i] = f(x.values[i], y.values[i]);
  return out;
}

// out axis i = in axis perm[i].
ConstTensor transpose(const ConstTensor& t, const std::vector<std::int64_t>& perm);
// Elements `indices` (negative counts from the end) along `axis`; output keeps the axis.
ConstTensor take(const ConstTensor& t, std::int64_t axis, const std::vector<std::int64_t>& indices);

// A normalized axis in [0, rank), or throws naming `who`.
std::int64_t normalize_axis(std::int64_t axis, std::size_t rank, const std::string& who);

}  // namespace dpushard::onnximport
