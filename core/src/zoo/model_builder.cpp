#include "model_builder.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"
#include "weights.hpp"

namespace dpushard::zoo {
namespace {

constexpr int kWeightLow = -127;
constexpr int kWeightHigh = 127;
constexpr int kBiasRange = 16;         // bias int8 in [-16, 16]
constexpr int kBiasExtraFixPoint = 2;  // bias at fp_out + 2: at most 4 output levels
constexpr int kMaxShiftCut = 16;       // the quantizer's shift_cut limit (VITIS_AI.md 2)
// Layernorm gamma = (64 + U[-8, 8]) / 64, beta = U[-8, 8] / 128.
constexpr int kGammaCenter = 64;
constexpr int kGammaFixPoint = 6;
constexpr int kAffineJitter = 8;
constexpr int kBetaFixPoint = 7;
constexpr double kLayernormEpsilon = 1e-6;

// The moment model of a fused activation's output.
Moments after_nonlinear(const Moments& x, Nonlinear nonlinear) {
  switch (nonlinear) {
    case Nonlinear::None:
      return x;
    case Nonlinear::Relu:
      return after_relu(x);
    case Nonlinear::HardSigmoid:
      return after_hard_sigmoid(x);
    case Nonlinear::HardSwish:
      return after_hard_swish(x);
    case Nonlinear::Relu6:
    case Nonlinear::LeakyRelu:
      break;
  }
  throw Error("zoo: no moment model for the " + std::string(nonlinear_op_type(nonlinear)) +
              " activation");
}

}  // namespace

int weight_fix_point(std::int64_t fan_in, int extra_shift) {
  // N(0, 1/fan_in) scaled into int8: 2^-fp_w ~ 1 / (128 sqrt(fan_in)).
  return 7 + static_cast<int>(std::lround(0.5 * std::log2(static_cast<double>(fan_in)))) +
         extra_shift;
}

double weight_gain(std::int64_t fan_in, int extra_shift) {
  return static_cast<double>(fan_in) * uniform_int_variance(kWeightLow, kWeightHigh) *
         std::ldexp(1.0, -2 * weight_fix_point(fan_in, extra_shift));
}

int product_fix_point(double m2, int fp_product) {
  return std::clamp(activation_fix_point(m2), fp_product - kMaxShiftCut, fp_product);
}

ModelBuilder::ModelBuilder(std::string graph_name, std::uint64_t seed, bool weights)
    : builder_(std::move(graph_name)), seed_(seed), weights_(weights) {}

Graph ModelBuilder::finish() {
  Graph graph = builder_.finish();
  if (!weights_) mark_weights_omitted(graph);
  return graph;
}

Act ModelBuilder::input(const std::string& name, std::vector<std::int64_t> shape, int fix_point) {
  // Uniform int8 over [-128, 127]: variance (256^2 - 1) / 12 levels^2.
  const double m2 = uniform_int_variance(-128, 127) * std::ldexp(1.0, -2 * fix_point);
  return {builder_.input(name, std::move(shape), fix_point), independent(m2)};
}

Value ModelBuilder::make_constant(const std::string& name, std::vector<std::int64_t> shape, int lo,
                                  int hi, int offset, int fix_point) {
  // Without weights only the shape is kept; the moment model never reads the values.
  if (!weights_) return builder_.shaped_constant(name, std::move(shape), fix_point);
  std::vector<std::int8_t> q =
      uniform_int8(stream_key(seed_, name), static_cast<std::size_t>(element_count(shape)), lo, hi);
  if (offset != 0)
    for (std::int8_t& v : q) v = static_cast<std::int8_t>(v + offset);
  return builder_.constant(name, std::move(shape), q, fix_point);
}

ModelBuilder::Weights ModelBuilder::make_weights(const std::string& name,
                                                 std::vector<std::int64_t> shape,
                                                 std::int64_t fan_in, int extra_shift) {
  const int fp = weight_fix_point(fan_in, extra_shift);
  const double variance = uniform_int_variance(kWeightLow, kWeightHigh) * std::ldexp(1.0, -2 * fp);
  return {make_constant(name, std::move(shape), kWeightLow, kWeightHigh, 0, fp), variance};
}

Value ModelBuilder::make_bias(const std::string& name, std::int64_t count, int out_fp,
                              double& variance) {
  const int fp = out_fp + kBiasExtraFixPoint;
  variance = uniform_int_variance(-kBiasRange, kBiasRange) * std::ldexp(1.0, -2 * fp);
  return make_constant(name, {count}, -kBiasRange, kBiasRange, 0, fp);
}

Act ModelBuilder::conv(const std::string& name, const Act& x, std::int64_t out_channels,
                       std::int64_t kernel, std::int64_t stride, std::int64_t pad, bool relu) {
  return conv(name, x, out_channels, kernel, stride, pad, relu ? Nonlinear::Relu : Nonlinear::None);
}

Act ModelBuilder::conv(const std::string& name, const Act& x, std::int64_t out_channels,
                       std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                       Nonlinear nonlinear, int weight_shift) {
  const std::int64_t in_channels = x.value.shape.back();
  const std::int64_t fan_in = kernel * kernel * in_channels;
  const Weights w = make_weights(name + "/weights", {out_channels, kernel, kernel, in_channels},
                                 fan_in, weight_shift);
  const double gain = static_cast<double>(fan_in) * w.variance;
  const auto model = [&](double bias_var) {
    return after_nonlinear(after_linear(x.moments, gain, bias_var), nonlinear);
  };
  const int fp_out = product_fix_point(model(0.0).m2(), x.value.fix_point + w.value.fix_point);
  double bias_var = 0.0;
  const Value bias = make_bias(name + "/bias", out_channels, fp_out, bias_var);

  Conv2dSpec spec;
  spec.kernel = {kernel, kernel};
  spec.stride = {stride, stride};
  spec.pad = {pad, pad, pad, pad};
  spec.nonlinear = nonlinear;
  return {builder_.conv2d(name, x.value, w.value, bias, spec, fp_out), model(bias_var)};
}

Act ModelBuilder::depthwise(const std::string& name, const Act& x, std::int64_t kernel) {
  const std::int64_t channels = x.value.shape.back();
  const std::int64_t fan_in = kernel * kernel;
  const Weights w = make_weights(name + "/weights", {1, kernel, kernel, channels}, fan_in, 0);
  const double gain = static_cast<double>(fan_in) * w.variance;
  const int fp_out = product_fix_point(after_linear(x.moments, gain, 0.0).m2(),
                                       x.value.fix_point + w.value.fix_point);
  double bias_var = 0.0;
  const Value bias = make_bias(name + "/bias", channels, fp_out, bias_var);

  Conv2dSpec spec;
  const std::int64_t pad = (kernel - 1) / 2;
  spec.kernel = {kernel, kernel};
  spec.pad = {pad, kernel - 1 - pad, pad, kernel - 1 - pad};
  return {builder_.depthwise_conv2d(name, x.value, w.value, bias, spec, fp_out),
          after_linear(x.moments, gain, bias_var)};
}

Act ModelBuilder::linear(const std::string& name, const Act& x, std::int64_t out_features,
                         bool relu, int weight_shift) {
  const std::int64_t fan_in = x.value.shape.back();
  const Weights w = make_weights(name + "/weights", {out_features, fan_in}, fan_in, weight_shift);
  const double gain = static_cast<double>(fan_in) * w.variance;
  const auto model = [&](double bias_var) {
    const Moments pre = after_linear(x.moments, gain, bias_var);
    return relu ? after_relu(pre) : pre;
  };
  const int fp_out = product_fix_point(model(0.0).m2(), x.value.fix_point + w.value.fix_point);
  double bias_var = 0.0;
  const Value bias = make_bias(name + "/bias", out_features, fp_out, bias_var);
  return {builder_.matmul(name, x.value, w.value, bias, /*transpose_b=*/true, fp_out,
                          relu ? Nonlinear::Relu : Nonlinear::None),
          model(bias_var)};
}

Act ModelBuilder::matmul(const std::string& name, const Act& a, const Act& b, bool transpose_b,
                         const Moments& out) {
  const int fp_out = product_fix_point(out.m2(), a.value.fix_point + b.value.fix_point);
  return {builder_.matmul(name, a.value, b.value, std::nullopt, transpose_b, fp_out), out};
}

Act ModelBuilder::mul(const std::string& name, const Act& a, const Act& b) {
  const Moments out = product(a.moments, b.moments);
  const int fp_out = product_fix_point(out.m2(), a.value.fix_point + b.value.fix_point);
  return {builder_.mul(name, a.value, b.value, fp_out), out};
}

Act ModelBuilder::add(const std::string& name, const std::vector<Act>& xs, bool relu) {
  Moments total = xs.front().moments;
  std::vector<Value> values{xs.front().value};
  for (std::size_t i = 1; i < xs.size(); ++i) {
    total = sum(total, xs[i].moments);
    values.push_back(xs[i].value);
  }
  if (relu) total = after_relu(total);
  return {builder_.add(name, values, activation_fix_point(total.m2()),
                       relu ? Nonlinear::Relu : Nonlinear::None),
          total};
}

Act ModelBuilder::concat(const std::string& name, const std::vector<Act>& xs, std::int64_t axis) {
  const auto size_along = [&](const Act& a) {
    return static_cast<double>(a.value.shape.at(static_cast<std::size_t>(axis)));
  };
  Moments total = xs.front().moments;
  double weight = size_along(xs.front());
  std::vector<Value> values{xs.front().value};
  for (std::size_t i = 1; i < xs.size(); ++i) {
    total = mixture(total, weight, xs[i].moments, size_along(xs[i]));
    weight += size_along(xs[i]);
    values.push_back(xs[i].value);
  }
  // Equal fix points make the concat a pure data move on the DPU.
  const int fp = xs.front().value.fix_point;
  return {builder_.concat(name, values, axis, fp), total};
}

Act ModelBuilder::layernorm(const std::string& name, const Act& x) {
  const std::int64_t channels = x.value.shape.back();
  const Value gamma = make_constant(name + "/gamma", {channels}, -kAffineJitter, kAffineJitter,
                                    kGammaCenter, kGammaFixPoint);
  const Value beta =
      make_constant(name + "/beta", {channels}, -kAffineJitter, kAffineJitter, 0, kBetaFixPoint);
  const double jitter = uniform_int_variance(-kAffineJitter, kAffineJitter);
  const double gamma_m2 = 1.0 + jitter * std::ldexp(1.0, -2 * kGammaFixPoint);
  const double beta_var = jitter * std::ldexp(1.0, -2 * kBetaFixPoint);
  const Moments out = after_layernorm(x.moments, gamma_m2, beta_var);
  return {builder_.layernorm(name, x.value, gamma, beta, kLayernormEpsilon,
                             activation_fix_point(out.m2())),
          out};
}

Act ModelBuilder::gelu(const std::string& name, const Act& x) {
  const Moments out = after_gelu(x.moments);
  return {builder_.gelu(name, x.value, activation_fix_point(out.m2())), out};
}

Act ModelBuilder::softmax(const std::string& name, const Act& x, std::int64_t axis, int fix_point,
                          const Moments& out) {
  return {builder_.softmax(name, x.value, axis, fix_point), out};
}

Act ModelBuilder::global_avgpool(const std::string& name, const Act& x) {
  const std::int64_t height = x.value.shape.at(1);
  const std::int64_t width = x.value.shape.at(2);
  Pool2dSpec spec;
  spec.kernel = {height, width};
  spec.stride = {height, width};
  spec.global = true;
  const Moments out = after_mean(x.moments, height * width);
  return {builder_.avgpool2d(name, x.value, spec, activation_fix_point(out.m2())), out};
}

Act ModelBuilder::avgpool(const std::string& name, const Act& x, std::int64_t kernel) {
  Pool2dSpec spec;
  spec.kernel = {kernel, kernel};
  spec.stride = {kernel, kernel};
  const Moments out = after_mean(x.moments, kernel * kernel);
  return {builder_.avgpool2d(name, x.value, spec, activation_fix_point(out.m2())), out};
}

Act ModelBuilder::reshape(const std::string& name, const Act& x, std::vector<std::int64_t> shape) {
  return {builder_.reshape(name, x.value, std::move(shape)), x.moments};
}

Act ModelBuilder::transpose(const std::string& name, const Act& x,
                            std::vector<std::int64_t> order) {
  return {builder_.transpose(name, x.value, std::move(order)), x.moments};
}

}  // namespace dpushard::zoo
