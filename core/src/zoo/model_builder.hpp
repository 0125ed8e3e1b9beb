#pragma once
// The zoo's layer vocabulary on top of GraphBuilder: each layer creates its seeded int8
// weights, picks fix points from the moment model (moments.hpp) and returns the value
// together with its modelled statistics.
//
// Fix point rules (docs/zoo.md):
// - weights: int8 uniform on [-127, 127] with fp_w = 7 + round(log2(sqrt(fan_in))), so
//   a weight is about N(0, 1/fan_in) scaled into the int8 range;
// - bias: int8 uniform on [-16, 16] at fp_out + 2 (at most 4 output levels), which keeps
//   shift_bias = shift_cut - 2 inside the quantizer's limits;
// - activations: fp_out from the modelled second moment (rms of the int8 values in
//   (12, 24]), clamped so that shift_cut = fp_in + fp_w - fp_out stays in [0, 16].

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/graph.hpp"
#include "moments.hpp"

namespace dpushard::zoo {

struct Act {
  Value value;
  Moments moments;
};

class ModelBuilder {
 public:
  // weights false: shaped constants only (ZooSpec::weights).
  ModelBuilder(std::string graph_name, std::uint64_t seed, bool weights = true);

  // NHWC (or token) input whose int8 values are uniform over the full range.
  Act input(const std::string& name, std::vector<std::int64_t> shape, int fix_point);

  // Square conv with OHWI weights [out, k, k, in], bias, optional fused ReLU.
  Act conv(const std::string& name, const Act& x, std::int64_t out_channels, std::int64_t kernel,
           std::int64_t stride, std::int64_t pad, bool relu);
  // The same with any of the DPU's fused activations (ReLU, hard-sigmoid, hard-swish, ...).
  // `weight_shift` adds to the weights' fix point (a batch norm folded into the conv).
  Act conv(const std::string& name, const Act& x, std::int64_t out_channels, std::int64_t kernel,
           std::int64_t stride, std::int64_t pad, Nonlinear nonlinear, int weight_shift = 0);
  // Depthwise k x k conv, stride 1, "same" padding: weights [1, k, k, C], bias.
  Act depthwise(const std::string& name, const Act& x, std::int64_t kernel);
  // x [..., K] times weights [N, K] (transpose_b) plus bias, optional fused ReLU.
  // `weight_shift` adds to the weights' fix point (scales the weights by 2^-shift).
  Act linear(const std::string& name, const Act& x, std::int64_t out_features, bool relu,
             int weight_shift = 0);
  // Product of two activations; `out` is the caller's model of the result.
  Act matmul(const std::string& name, const Act& a, const Act& b, bool transpose_b,
             const Moments& out);
  // Elementwise product of two activations (equal shapes, or a [1, 1, 1, C] per-channel
  // scale broadcast over a feature map, as in a squeeze-excitation block).
  Act mul(const std::string& name, const Act& a, const Act& b);
  // Sum of independent tensors (residual branches, the sum join), optional ReLU.
  Act add(const std::string& name, const std::vector<Act>& xs, bool relu);
  // Concatenation along `axis`; all inputs get the fix point of the first.
  Act concat(const std::string& name, const std::vector<Act>& xs, std::int64_t axis);
  Act layernorm(const std::string& name, const Act& x);
  Act gelu(const std::string& name, const Act& x);
  // Softmax with a caller-chosen output fix point and model.
  Act softmax(const std::string& name, const Act& x, std::int64_t axis, int fix_point,
              const Moments& out);
  // Mean over the spatial positions of an NHWC tensor -> [1, 1, 1, C].
  Act global_avgpool(const std::string& name, const Act& x);
  // Average pool with a square k x k window and stride k (no padding).
  Act avgpool(const std::string& name, const Act& x, std::int64_t kernel);
  Act reshape(const std::string& name, const Act& x, std::vector<std::int64_t> shape);
  Act transpose(const std::string& name, const Act& x, std::vector<std::int64_t> order);

  Graph finish();

 private:
  struct Weights {
    Value value;
    double variance;  // of the real weight values
  };
  Weights make_weights(const std::string& name, std::vector<std::int64_t> shape,
                       std::int64_t fan_in, int extra_shift);
  Value make_bias(const std::string& name, std::int64_t count, int out_fp, double& variance);
  Value make_constant(const std::string& name, std::vector<std::int64_t> shape, int lo, int hi,
                      int offset, int fix_point);

  GraphBuilder builder_;
  std::uint64_t seed_;
  bool weights_;
};

// Fix point of the int8 weights of a layer with `fan_in` inputs, plus `extra_shift`.
int weight_fix_point(std::int64_t fan_in, int extra_shift);
// fan_in * var(w): the factor by which such a layer multiplies E[x^2].
double weight_gain(std::int64_t fan_in, int extra_shift);

// Fix point of a product's output: from the model, clamped so that
// shift_cut = fp_product - fp_out stays in [0, 16].
int product_fix_point(double m2, int fp_product);

}  // namespace dpushard::zoo
