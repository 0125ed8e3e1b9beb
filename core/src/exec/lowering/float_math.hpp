#pragma once
// The float activations the ref backend evaluates in double precision (CPU ops on the
// KV260's DPU), shared by standalone float ops and chains that end in one.

#include <string_view>

namespace dpushard::lowering {

enum class Activation { Relu, Relu6, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Gelu };

// The activation an op type names, or false when `type` is not one.
bool activation_of(std::string_view type, Activation& out);

// f(x) in double; `alpha` is used by LeakyRelu only.
//   relu6(x) = min(max(x, 0), 6); hard-sigmoid(x) = relu6(x + 3) / 6;
//   hard-swish(x) = x * hard-sigmoid(x); gelu(x) = x / 2 * (1 + erf(x / sqrt(2))).
double apply_activation(Activation activation, double x, double alpha);

}  // namespace dpushard::lowering
