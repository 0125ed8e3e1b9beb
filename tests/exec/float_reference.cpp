#include "float_reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/numerics.hpp"

namespace dpushard::testing {

namespace {

std::int64_t product(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

FloatTensor conv2d(const Op& op, const FloatTensor& x, const FloatTensor& w, const FloatTensor* b) {
  const auto stride = ints_attr_or(op.attrs, "stride", {1, 1});      // {w, h}
  const auto dilation = ints_attr_or(op.attrs, "dilation", {1, 1});  // {w, h}
  const auto pad = ints_attr_or(op.attrs, "pad", {0, 0, 0, 0});      // {l, r, t, b}
  EXPECT_EQ(int_attr(op.attrs, "group", 1), 1) << op.name;
  const std::int64_t n = x.shape[0], h = x.shape[1], wd = x.shape[2], c = x.shape[3];
  const std::int64_t oc = w.shape[0], kh = w.shape[1], kw = w.shape[2];
  const std::int64_t oh = (h + pad[2] + pad[3] - dilation[1] * (kh - 1) - 1) / stride[1] + 1;
  const std::int64_t ow = (wd + pad[0] + pad[1] - dilation[0] * (kw - 1) - 1) / stride[0] + 1;
  FloatTensor y{{n, oh, ow, oc}, std::vector<double>(at(n * oh * ow * oc))};
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t r = 0; r < oh; ++r)
      for (std::int64_t s = 0; s < ow; ++s)
        for (std::int64_t o = 0; o < oc; ++o) {
          double sum = b ? b->values[at(o)] : 0.0;
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j) {
              const std::int64_t row = r * stride[1] - pad[2] + i * dilation[1];
              const std::int64_t col = s * stride[0] - pad[0] + j * dilation[0];
              if (row < 0 || row >= h || col < 0 || col >= wd) continue;
              for (std::int64_t k = 0; k < c; ++k)
                sum += x.values[at(((in * h + row) * wd + col) * c + k)] *
                       w.values[at(((o * kh + i) * kw + j) * c + k)];
            }
          y.values[at(((in * oh + r) * ow + s) * oc + o)] = sum;
        }
  return y;
}

FloatTensor avgpool(const Op& op, const FloatTensor& x) {
  const std::int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  EXPECT_TRUE(bool_attr(op.attrs, "global", false)) << op.name << ": only global pools";
  FloatTensor y{{n, 1, 1, c}, std::vector<double>(at(n * c))};
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t k = 0; k < c; ++k) {
      double sum = 0.0;
      for (std::int64_t p = 0; p < h * w; ++p) sum += x.values[at((in * h * w + p) * c + k)];
      y.values[at(in * c + k)] = sum / static_cast<double>(h * w);
    }
  return y;
}

FloatTensor matmul(const Op& op, const FloatTensor& a, const FloatTensor& b,
                   const FloatTensor* bias) {
  const bool transpose_b = bool_attr(op.attrs, "transpose_b", false);
  const std::int64_t m = a.shape[0], k = a.shape[1];
  const std::int64_t n = transpose_b ? b.shape[0] : b.shape[1];
  FloatTensor y{{m, n}, std::vector<double>(at(m * n))};
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = bias ? bias->values[at(j)] : 0.0;
      for (std::int64_t t = 0; t < k; ++t)
        sum += a.values[at(i * k + t)] * b.values[at(transpose_b ? j * k + t : t * n + j)];
      y.values[at(i * n + j)] = sum;
    }
  return y;
}

}  // namespace

std::vector<FloatTensor> run_float_reference(const Graph& graph, const std::vector<QTensor>& inputs,
                                             bool fake_quant) {
  std::map<std::string, FloatTensor> values;
  std::size_t next_input = 0;
  auto in = [&](const Op& op, std::string_view arg, std::size_t i) -> const FloatTensor& {
    return values.at(op.producers(arg).at(i));
  };
  for (std::size_t index : graph.topological_order()) {
    const Op& op = graph.ops()[index];
    FloatTensor out;
    if (op.type == "data") {
      const QTensor& q = inputs.at(next_input++);
      out.shape = q.shape;
      for (auto v : q.data) out.values.push_back(dequantize(v, q.fix_point));
    } else if (op.type == "const") {
      out.shape = op.output.shape;
      for (float v : const_values(op)) out.values.push_back(double{v});
    } else if (op.type == "fix") {
      out = in(op, "input", 0);
      if (fake_quant) {
        const auto fp = static_cast<int>(int_attr(op.attrs, "fix_point", 0));
        const RoundMode mode = parse_round_mode(string_attr(op.attrs, "round_mode", "DPU_ROUND"));
        for (double& v : out.values) v = dequantize(quantize(v, fp, mode), fp);
      }
    } else if (op.type == "conv2d") {
      const auto& bias = op.producers("bias");
      out = conv2d(op, in(op, "input", 0), in(op, "weights", 0),
                   bias.empty() ? nullptr : &values.at(bias[0]));
    } else if (op.type == "relu") {
      out = in(op, "input", 0);
      for (double& v : out.values) v = std::max(v, 0.0);
    } else if (op.type == "add" || op.type == "mul") {
      out = in(op, "input", 0);
      const FloatTensor& other = in(op, "input", 1);
      for (std::size_t i = 0; i < out.values.size(); ++i) {
        const double v = other.values[other.values.size() == 1 ? 0 : i];
        out.values[i] = op.type == "add" ? out.values[i] + v : out.values[i] * v;
      }
    } else if (op.type == "avgpool2d") {
      out = avgpool(op, in(op, "input", 0));
    } else if (op.type == "reshape") {
      out = in(op, "input", 0);
      out.shape = op.output.shape;
    } else if (op.type == "stack") {
      // Shape constants for a reshape: no data.
    } else if (op.type == "matmul") {
      const auto& bias = op.producers("bias");
      out = matmul(op, in(op, "input", 0), in(op, "input", 1),
                   bias.empty() ? nullptr : &values.at(bias[0]));
    } else {
      ADD_FAILURE() << "float reference: op type " << op.type << " not supported";
      return {};
    }
    EXPECT_TRUE(op.type == "stack" ||
                product(out.shape) == static_cast<std::int64_t>(out.values.size()))
        << op.name;
    values[op.name] = std::move(out);
  }
  std::vector<FloatTensor> outputs;
  for (const Op* op : graph.outputs()) outputs.push_back(values.at(op->name));
  return outputs;
}

}  // namespace dpushard::testing
