#include "epilogue.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "dpushard/graph/attr.hpp"

namespace dpushard::lowering {

namespace {

// Shifts outside this range cannot come from an 8-bit quantizer (it keeps shift_cut in
// [0, 16]); they mean a damaged fix_point, reported at load.
constexpr int kMinShift = -48;
constexpr int kMaxShift = 62;

}  // namespace

std::int8_t requantize_dpu(std::int64_t acc, int shift) {
  if (shift < 0) {
    // Scaling up: any |acc| > 256 saturates anyway, so clamp first to keep acc * 2^-shift
    // inside int64.
    acc = std::clamp<std::int64_t>(acc, -256, 256);
  }
  return saturate_int8(shift_round_dpu(acc, shift));
}

Epilogue::Epilogue(const Chain& chain, int acc_exp)
    : acc_exp_(acc_exp),
      cut_(acc_exp - chain.fp_out),
      fp_out_(chain.fp_out),
      round_mode_(chain.round_mode) {
  if (cut_ < kMinShift || cut_ > kMaxShift)
    fail(chain.producer, "shift " + std::to_string(cut_) + " to fix_point " +
                             std::to_string(chain.fp_out) + " is out of range");
  if (acc_exp_ >= 0)
    relu6_max_ = std::int64_t{6} << acc_exp_;
  else
    relu6_max_ = std::int64_t{6} >> (-acc_exp_);  // floor(6 * 2^acc_exp): acc is integer
  if (chain.nonlinear == nullptr) return;

  const Op& nl = *chain.nonlinear;
  if (!activation_of(nl.type, activation_))
    fail(nl, "is not an activation the ref backend can fuse before a fix");
  switch (activation_) {
    case Activation::Relu:
      kind_ = Kind::Relu;
      break;
    case Activation::Relu6:
      kind_ = Kind::Relu6;
      break;
    case Activation::LeakyRelu: {
      alpha_ = float_attr(nl.attrs, "alpha", std::nan(""));
      if (std::isnan(alpha_)) fail(nl, "missing attribute 'alpha'");
      // The attribute is stored as float32; 0.1f is the DPU's 26/256 slope.
      kind_ = std::fabs(alpha_ - 0.1) < 1e-6 ? Kind::Leaky26 : Kind::Float;
      break;
    }
    default:
      kind_ = Kind::Float;
      break;
  }
}

std::int8_t Epilogue::operator()(std::int64_t acc) const {
  switch (kind_) {
    case Kind::None:
      return requantize_dpu(acc, cut_);
    case Kind::Relu:
      return requantize_dpu(std::max<std::int64_t>(acc, 0), cut_);
    case Kind::Relu6:
      return requantize_dpu(std::clamp<std::int64_t>(acc, 0, relu6_max_), cut_);
    case Kind::Leaky26:
      // acc * 26 / 256 and the cut in one rounding: the value a float 26/256 slope
      // followed by the fix gives (the quantizer's simulation).
      if (acc < 0) return requantize_dpu(acc * kLeakyNumerator, cut_ + kLeakyShift);
      return requantize_dpu(acc, cut_);
    case Kind::Float:
      return from_value(std::ldexp(static_cast<double>(acc), -acc_exp_));
  }
  return 0;
}

std::int8_t Epilogue::from_value(double value) const {
  double y = value;
  switch (kind_) {
    case Kind::None:
      break;
    case Kind::Relu:
      y = apply_activation(Activation::Relu, value, 0.0);
      break;
    case Kind::Relu6:
      y = apply_activation(Activation::Relu6, value, 0.0);
      break;
    case Kind::Leaky26:
      y = value < 0.0 ? value * 26.0 / 256.0 : value;
      break;
    case Kind::Float:
      y = apply_activation(activation_, value, alpha_);
      break;
  }
  return quantize(y, fp_out_, round_mode_);
}

}  // namespace dpushard::lowering
