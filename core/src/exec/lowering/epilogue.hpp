#pragma once
// The end of every integer chain: the nonlinear between producer and fix, then the
// requantization of the accumulator to the fix's fix_point (see docs/numerics.md).

#include <cstdint>

#include "float_math.hpp"
#include "program.hpp"

namespace dpushard::lowering {

// clamp(DPU_ROUND(acc / 2^shift), -128, 127); shift < 0 multiplies, exactly.
std::int8_t requantize_dpu(std::int64_t acc, int shift);

class Epilogue {
 public:
  // `acc_exp`: the accumulator holds value * 2^acc_exp. Throws naming the chain's
  // producer when the shift to the fix's fix_point is out of range or the nonlinear
  // is not an activation.
  Epilogue(const Chain& chain, int acc_exp);

  // Integer path: nonlinear on the accumulator, then DPU_ROUND to fp_out, saturate.
  // A float activation instead evaluates f(acc * 2^-acc_exp) in double and quantizes
  // with the fix's round mode.
  std::int8_t operator()(std::int64_t acc) const;
  // Float path: the nonlinear in double on an exact value, quantized with the fix's
  // round mode (used where the value is not an integer accumulator).
  std::int8_t from_value(double value) const;

  // What the integer path does, for backends that vectorise it (cpu): the nonlinear, the
  // shift to fp_out (cut), and relu6's bound in accumulator scale.
  enum class Kind { None, Relu, Relu6, Leaky26, Float };
  Kind kind() const { return kind_; }
  int cut() const { return cut_; }
  std::int64_t relu6_max() const { return relu6_max_; }

 private:
  Kind kind_ = Kind::None;
  Activation activation_ = Activation::Relu;
  double alpha_ = 0.0;
  int acc_exp_ = 0;
  int cut_ = 0;                 // acc_exp - fp_out
  std::int64_t relu6_max_ = 0;  // 6 in accumulator scale, floored
  int fp_out_ = 0;
  RoundMode round_mode_ = RoundMode::Dpu;
};

}  // namespace dpushard::lowering
