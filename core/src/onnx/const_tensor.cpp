#include "const_tensor.hpp"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <sstream>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"

namespace dpushard::onnximport {

std::int64_t ConstTensor::count() const { return element_count(shape); }

double ConstTensor::scalar(const std::string& who) const {
  if (values.size() != 1)
    throw Error(who + ": expected a single value, got shape " + shape_text(shape));
  return values[0];
}

std::vector<std::int64_t> ConstTensor::ints() const {
  std::vector<std::int64_t> out;
  out.reserve(values.size());
  // int64 extremes (Slice's "to the end") do not survive double exactly; clamp them.
  constexpr double kLimit = 4.0e18;
  for (double v : values) {
    const double c = std::fmax(-kLimit, std::fmin(kLimit, v));
    out.push_back(static_cast<std::int64_t>(std::llround(c)));
  }
  return out;
}

std::vector<float> ConstTensor::floats() const {
  std::vector<float> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(static_cast<float>(v));
  return out;
}

namespace {

template <typename T>
void append_raw(const std::string& raw, std::vector<double>& out, const std::string& who,
                std::size_t count) {
  if (raw.size() != count * sizeof(T))
    throw Error(who + ": raw_data holds " + std::to_string(raw.size()) + " bytes for " +
                std::to_string(count) + " values");
  out.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

double half_to_double(std::uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v = 0.0;
  if (exponent == 0)
    v = std::ldexp(mantissa, -24);
  else if (exponent == 31)
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(mantissa + 1024, exponent - 25);
  return (h & 0x8000) ? -v : v;
}

}  // namespace

ConstTensor from_tensor_proto(const onnx::TensorProto& tensor, const std::string& who) {
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    throw Error(who + ": external tensor data is not supported (re-export without it)");
  ConstTensor out;
  for (auto d : tensor.dims()) {
    if (d < 0) throw Error(who + ": negative dimension");
    out.shape.push_back(d);
  }
  const auto n = static_cast<std::size_t>(element_count(out.shape));
  const std::string& raw = tensor.raw_data();
  const bool has_raw = tensor.has_raw_data();
  using TP = onnx::TensorProto;
  switch (tensor.data_type()) {
    case TP::FLOAT:
      if (has_raw)
        append_raw<float>(raw, out.values, who, n);
      else
        out.values.assign(tensor.float_data().begin(), tensor.float_data().end());
      break;
    case TP::DOUBLE:
      if (has_raw)
        append_raw<double>(raw, out.values, who, n);
      else
        out.values.assign(tensor.double_data().begin(), tensor.double_data().end());
      break;
    case TP::FLOAT16:
      if (has_raw) {
        std::vector<double> bits;
        append_raw<std::uint16_t>(raw, bits, who, n);
        for (double b : bits) out.values.push_back(half_to_double(static_cast<std::uint16_t>(b)));
      } else {
        for (auto b : tensor.int32_data())
          out.values.push_back(half_to_double(static_cast<std::uint16_t>(b)));
      }
      break;
    case TP::INT64:
      out.integer = true;
      if (has_raw)
        append_raw<std::int64_t>(raw, out.values, who, n);
      else
        for (auto v : tensor.int64_data()) out.values.push_back(static_cast<double>(v));
      break;
    case TP::INT32:
    case TP::INT16:
    case TP::INT8:
    case TP::UINT8:
    case TP::BOOL:
      out.integer = true;
      if (has_raw) {
        switch (tensor.data_type()) {
          case TP::INT32:
            append_raw<std::int32_t>(raw, out.values, who, n);
            break;
          case TP::INT16:
            append_raw<std::int16_t>(raw, out.values, who, n);
            break;
          case TP::INT8:
            append_raw<std::int8_t>(raw, out.values, who, n);
            break;
          default:
            append_raw<std::uint8_t>(raw, out.values, who, n);
            break;
        }
      } else {
        for (auto v : tensor.int32_data()) out.values.push_back(static_cast<double>(v));
      }
      break;
    default:
      throw Error(who + ": tensor data type " + std::to_string(tensor.data_type()) +
                  " is not supported");
  }
  if (out.values.size() != n)
    throw Error(who + ": holds " + std::to_string(out.values.size()) + " values for shape " +
                shape_text(out.shape));
  return out;
}

ConstTensor make_ints(const std::vector<std::int64_t>& values) {
  ConstTensor t;
  t.shape = {static_cast<std::int64_t>(values.size())};
  t.integer = true;
  for (auto v : values) t.values.push_back(static_cast<double>(v));
  return t;
}

ConstTensor make_scalar(double value, bool integer) { return {{}, {value}, integer}; }

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& who) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t oa = out.size() - a.size(), ob = out.size() - b.size();
    const std::int64_t da = i < oa ? 1 : a[i - oa];
    const std::int64_t db = i < ob ? 1 : b[i - ob];
    if (da != db && da != 1 && db != 1)
      throw Error(who + ": cannot broadcast " + shape_text(a) + " with " + shape_text(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

ConstTensor broadcast_to(const ConstTensor& t, const Shape& shape, const std::string& who) {
  if (t.shape == shape) return t;
  if (broadcast_shapes(t.shape, shape, who) != shape)
    throw Error(who + ": cannot broadcast " + shape_text(t.shape) + " to " + shape_text(shape));
  const std::size_t rank = shape.size();
  const std::size_t offset = rank - t.shape.size();
  // Source strides, 0 along broadcast axes.
  std::vector<std::int64_t> stride(rank, 0);
  std::int64_t s = 1;
  for (std::size_t i = rank; i-- > offset;) {
    const std::int64_t d = t.shape[i - offset];
    stride[i] = d == 1 ? 0 : s;
    s *= d;
  }
  ConstTensor out{shape, std::vector<double>(static_cast<std::size_t>(element_count(shape))),
                  t.integer};
  std::vector<std::int64_t> index(rank, 0);
  for (std::size_t flat = 0; flat < out.values.size(); ++flat) {
    std::int64_t src = 0;
    for (std::size_t i = 0; i < rank; ++i) src += index[i] * stride[i];
    out.values[flat] = t.values[static_cast<std::size_t>(src)];
    for (std::size_t i = rank; i-- > 0;) {
      if (++index[i] < shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

ConstTensor transpose(const ConstTensor& t, const std::vector<std::int64_t>& perm) {
  const std::size_t rank = t.shape.size();
  Shape out_shape(rank);
  std::vector<std::int64_t> in_stride(rank, 1);
  for (std::size_t i = rank; i-- > 1;) in_stride[i - 1] = in_stride[i] * t.shape[i];
  for (std::size_t i = 0; i < rank; ++i) out_shape[i] = t.shape[static_cast<std::size_t>(perm[i])];
  ConstTensor out{out_shape, std::vector<double>(t.values.size()), t.integer};
  std::vector<std::int64_t> index(rank, 0);
  for (std::size_t flat = 0; flat < out.values.size(); ++flat) {
    std::int64_t src = 0;
    for (std::size_t i = 0; i < rank; ++i)
      src += index[i] * in_stride[static_cast<std::size_t>(perm[i])];
    out.values[flat] = t.values[static_cast<std::size_t>(src)];
    for (std::size_t i = rank; i-- > 0;) {
      if (++index[i] < out_shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

ConstTensor take(const ConstTensor& t, std::int64_t axis,
                 const std::vector<std::int64_t>& indices) {
  const auto a = static_cast<std::size_t>(axis);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < a; ++i) outer *= t.shape[i];
  for (std::size_t i = a + 1; i < t.shape.size(); ++i) inner *= t.shape[i];
  const std::int64_t dim = t.shape[a];
  ConstTensor out;
  out.integer = t.integer;
  out.shape = t.shape;
  out.shape[a] = static_cast<std::int64_t>(indices.size());
  out.values.reserve(static_cast<std::size_t>(outer) * indices.size() *
                     static_cast<std::size_t>(inner));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t idx : indices) {
      const std::int64_t k = idx < 0 ? idx + dim : idx;
      if (k < 0 || k >= dim)
        throw Error("index " + std::to_string(idx) + " out of range for dimension " +
                    std::to_string(dim));
      for (std::int64_t i = 0; i < inner; ++i)
        out.values.push_back(t.values[static_cast<std::size_t>((o * dim + k) * inner + i)]);
    }
  return out;
}

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank, const std::string& who) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw Error(who + ": axis " + std::to_string(axis) + " out of range for rank " +
                std::to_string(rank));
  return a;
}

}  // namespace dpushard::onnximport
