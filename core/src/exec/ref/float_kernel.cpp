// Float ops between fix ops (CPU ops on the KV260): the inputs are dequantized
// (q * 2^-fp), the op is computed in double, and the result is quantized with the round
// mode of the closing fix.
//   softmax(x)_i = exp(x_i - max) / sum_j exp(x_j - max) along `axis` (default -1);
//   layernorm: over the dimensions from `axis` (default -1) to the last,
//     y = (x - mean) / sqrt(var + epsilon) * gamma + beta, var the biased variance.

#include <algorithm>
#include <cmath>
#include <string>

#include "dpushard/graph/attr.hpp"
#include "kernels.hpp"

namespace dpushard::ref {

namespace {

// A float operand of a float op: a fixed tensor (dequantized each frame) or a float const.
struct FloatOperand {
  std::optional<SlotId> slot;
  std::vector<float> values;

  double at(const Slots& slots, std::int64_t i) const {
    const auto index = static_cast<std::size_t>(i);
    if (slot) return dequantize(slots[*slot].data[index], slots[*slot].fix_point);
    return double{values[index]};
  }
};

FloatOperand float_operand(const Op& op, const std::string& producer, const Lowering& lowering,
                           std::int64_t expected_count) {
  FloatOperand operand;
  std::int64_t count = 0;
  if (auto values = lowering.raw_const(producer)) {
    count = static_cast<std::int64_t>(values->size());
    operand.values = std::move(*values);
  } else {
    operand.slot = lowering.fixed(op, producer);
    count = element_count(lowering.slot(*operand.slot).shape);
  }
  if (count != expected_count)
    fail(op, "operand '" + producer + "' has " + std::to_string(count) + " values, expected " +
                 std::to_string(expected_count));
  return operand;
}

// Splits a shape at `axis` into [outer, axis length, inner].
struct Split {
  std::int64_t outer = 1, length = 1, inner = 1;
};

Split split_at(const Op& op, const std::vector<std::int64_t>& shape, std::int64_t axis,
               bool to_end) {
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) fail(op, "axis out of range for input " + shape_text(shape));
  const auto a = static_cast<std::size_t>(axis);
  Split s;
  s.outer = element_count({shape.begin(), shape.begin() + axis});
  if (to_end) {
    s.length = element_count({shape.begin() + axis, shape.end()});
  } else {
    s.length = shape[a];
    s.inner = element_count({shape.begin() + axis + 1, shape.end()});
  }
  return s;
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(Split split, SlotId in, SlotId out, int fp_out, RoundMode mode)
      : s_(split),
        in_(in),
        out_(out),
        fp_out_(fp_out),
        mode_(mode),
        exps_(static_cast<std::size_t>(split.length)) {}

  void run(Slots& slots) override {
    const QTensor& x = slots[in_];
    std::int8_t* y = slots[out_].data.data();
    for (std::int64_t o = 0; o < s_.outer; ++o)
      for (std::int64_t i = 0; i < s_.inner; ++i) {
        const std::int64_t base = o * s_.length * s_.inner + i;
        auto value = [&](std::int64_t k) {
          return dequantize(x.data[static_cast<std::size_t>(base + k * s_.inner)], x.fix_point);
        };
        double max = value(0);
        for (std::int64_t k = 1; k < s_.length; ++k) max = std::max(max, value(k));
        double sum = 0.0;
        for (std::int64_t k = 0; k < s_.length; ++k) {
          exps_[static_cast<std::size_t>(k)] = std::exp(value(k) - max);
          sum += exps_[static_cast<std::size_t>(k)];
        }
        for (std::int64_t k = 0; k < s_.length; ++k)
          y[base + k * s_.inner] =
              quantize(exps_[static_cast<std::size_t>(k)] / sum, fp_out_, mode_);
      }
  }

 private:
  Split s_;
  SlotId in_, out_;
  int fp_out_;
  RoundMode mode_;
  std::vector<double> exps_;  // one row, sized at load
};

class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(Split split, SlotId in, FloatOperand gamma, FloatOperand beta, double epsilon,
                  SlotId out, int fp_out, RoundMode mode)
      : s_(split),
        in_(in),
        gamma_(std::move(gamma)),
        beta_(std::move(beta)),
        epsilon_(epsilon),
        out_(out),
        fp_out_(fp_out),
        mode_(mode) {}

  void run(Slots& slots) override {
    const QTensor& x = slots[in_];
    std::int8_t* y = slots[out_].data.data();
    const auto n = static_cast<double>(s_.length);
    for (std::int64_t o = 0; o < s_.outer; ++o) {
      const std::int64_t base = o * s_.length;
      auto value = [&](std::int64_t k) {
        return dequantize(x.data[static_cast<std::size_t>(base + k)], x.fix_point);
      };
      double mean = 0.0;
      for (std::int64_t k = 0; k < s_.length; ++k) mean += value(k);
      mean /= n;
      double var = 0.0;
      for (std::int64_t k = 0; k < s_.length; ++k) var += (value(k) - mean) * (value(k) - mean);
      var /= n;
      const double inv_std = 1.0 / std::sqrt(var + epsilon_);
      for (std::int64_t k = 0; k < s_.length; ++k) {
        const double normalized = (value(k) - mean) * inv_std;
        y[base + k] =
            quantize(normalized * gamma_.at(slots, k) + beta_.at(slots, k), fp_out_, mode_);
      }
    }
  }

 private:
  Split s_;
  SlotId in_;
  FloatOperand gamma_, beta_;
  double epsilon_;
  SlotId out_;
  int fp_out_;
  RoundMode mode_;
};

void check_float_chain(const Chain& chain, const Lowering& lowering, SlotId in) {
  if (chain.nonlinear != nullptr)
    fail(*chain.nonlinear, "cannot follow a " + chain.producer.type + " before its fix");
  const auto& x = lowering.slot(in).shape;
  const auto& y = lowering.slot(chain.out).shape;
  if (x != y)
    fail(chain.producer, "input " + shape_text(x) + " and output " + shape_text(y) + " differ");
}

}  // namespace

std::unique_ptr<Kernel> make_softmax(const Chain& chain, const Lowering& lowering) {
  const Op& op = chain.producer;
  const SlotId in = lowering.arg_slot(op, "input", 0);
  check_float_chain(chain, lowering, in);
  const Split split = split_at(op, lowering.slot(in).shape, int_attr(op.attrs, "axis", -1), false);
  return std::make_unique<SoftmaxKernel>(split, in, chain.out, chain.fp_out, chain.round_mode);
}

std::unique_ptr<Kernel> make_layernorm(const Chain& chain, const Lowering& lowering) {
  const Op& op = chain.producer;
  const SlotId in = lowering.arg_slot(op, "input", 0);
  check_float_chain(chain, lowering, in);
  const Split split = split_at(op, lowering.slot(in).shape, int_attr(op.attrs, "axis", -1), true);
  // gamma and beta: their own args, or the second and third producers of `input`.
  auto producer = [&](std::string_view arg, std::size_t index) -> std::string {
    if (!op.producers(arg).empty()) return op.producers(arg).front();
    const auto& inputs = op.producers("input");
    if (index < inputs.size()) return inputs[index];
    fail(op, "missing " + std::string(arg));
  };
  FloatOperand gamma = float_operand(op, producer("gamma", 1), lowering, split.length);
  FloatOperand beta = float_operand(op, producer("beta", 2), lowering, split.length);
  const double epsilon = float_attr(op.attrs, "epsilon", 1e-5);
  if (!(epsilon >= 0.0)) fail(op, "epsilon must be non-negative");
  return std::make_unique<LayerNormKernel>(split, in, std::move(gamma), std::move(beta), epsilon,
                                           chain.out, chain.fp_out, chain.round_mode);
}

}  // namespace dpushard::ref
