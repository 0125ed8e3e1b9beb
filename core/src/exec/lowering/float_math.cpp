#include "float_math.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace dpushard::lowering {

bool activation_of(std::string_view type, Activation& out) {
  struct Entry {
    std::string_view type;
    Activation activation;
  };
  static constexpr Entry kEntries[] = {
      {"relu", Activation::Relu},
      {"relu6", Activation::Relu6},
      {"leaky-relu", Activation::LeakyRelu},
      {"sigmoid", Activation::Sigmoid},
      {"hard-sigmoid", Activation::HardSigmoid},
      {"hard-swish", Activation::HardSwish},
      {"gelu", Activation::Gelu},
  };
  for (const auto& entry : kEntries)
    if (entry.type == type) {
      out = entry.activation;
      return true;
    }
  return false;
}

double apply_activation(Activation activation, double x, double alpha) {
  switch (activation) {
    case Activation::Relu:
      return std::max(x, 0.0);
    case Activation::Relu6:
      return std::clamp(x, 0.0, 6.0);
    case Activation::LeakyRelu:
      return x < 0.0 ? alpha * x : x;
    case Activation::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::HardSigmoid:
      return std::clamp(x + 3.0, 0.0, 6.0) / 6.0;
    case Activation::HardSwish:
      return x * std::clamp(x + 3.0, 0.0, 6.0) / 6.0;
    case Activation::Gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  }
  return x;
}

}  // namespace dpushard::lowering
