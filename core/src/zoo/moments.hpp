#pragma once
// A data-free model of activation statistics, used by the zoo to choose fix points the
// way a calibrating quantizer would, but from the (random) weights' distribution alone.
//
// An activation element at (position p, channel c) is modelled as
//   mean + shared_c + spread_{p,c}
// with `mean` common to all elements, shared_c ~ (0, shared) varying across channels but
// identical at every position / token, and spread ~ (0, spread) varying per element.
// The split matters: ReLU outputs have a positive mean, a random-weight conv turns that
// mean into per-channel offsets (shared), and averaging over positions or tokens keeps
// the shared part while dividing the spread.

#include <cstdint>

namespace dpushard::zoo {

struct Moments {
  double mean = 0.0;
  double shared = 0.0;  // variance across channels of the per-channel offset
  double spread = 0.0;  // variance of the per-element part

  double m2() const { return mean * mean + shared + spread; }  // E[x^2]
};

// Independent per-element values with second moment `m2` (a model input).
Moments independent(double m2);

// y = W x + b with zero-mean weights of per-output gain fan_in * var(w), and bias
// values of variance `bias_var` (per channel, so they add to `shared`).
Moments after_linear(const Moments& x, double gain, double bias_var);

// Elementwise nonlinearities, integrated numerically over the model's distribution.
Moments after_relu(const Moments& x);
Moments after_gelu(const Moments& x);
// hard-sigmoid(x) = relu6(x + 3) / 6 and hard-swish(x) = x hard-sigmoid(x), the DPU's
// piecewise-linear stand-ins for sigmoid and GELU/SiLU.
Moments after_hard_sigmoid(const Moments& x);
Moments after_hard_swish(const Moments& x);

// Per-token layernorm over channels with gamma of second moment `gamma_m2` and beta of
// variance `beta_var`: removes the mean and rescales to unit variance.
Moments after_layernorm(const Moments& x, double gamma_m2, double beta_var);

// Average over `positions` positions (global pooling, or mean over tokens).
Moments after_mean(const Moments& x, std::int64_t positions);

// Elementwise sum of independent tensors (residual branches, the sum join).
Moments sum(const Moments& a, const Moments& b);

// Elementwise product of independent tensors (a gate times a value; a per-channel scale
// times a feature map): means multiply, and so do the per-channel and total second moments.
Moments product(const Moments& a, const Moments& b);

// Concatenation along channels: channel-count weighted mixture.
Moments mixture(const Moments& a, double weight_a, const Moments& b, double weight_b);

// Fix point that puts the rms of the int8 values in (12, 24]: about 5 to 10 standard
// deviations below saturation and 12 to 24 levels per standard deviation.
int activation_fix_point(double m2);

}  // namespace dpushard::zoo
