// Elementwise add and mul (see docs/numerics.md):
//   add: each q_i aligned to the largest input fix_point (q_i << (fp_max - fp_i)), summed,
//        then the epilogue from that scale;
//   mul: q_a * q_b at scale fp_a + fp_b, then the epilogue;
//   mul by a float constant (not a fixed tensor): dequantize, multiply in double, quantize.
// Inputs broadcast to the output shape.

#include <algorithm>
#include <string>

#include "../lowering/broadcast.hpp"
#include "../lowering/epilogue.hpp"
#include "kernels.hpp"

namespace dpushard::ref {

using lowering::Broadcast;

namespace {

class AddKernel final : public Kernel {
 public:
  AddKernel(Broadcast broadcast, std::vector<SlotId> inputs, std::vector<int> aligns,
            Epilogue epilogue, SlotId out)
      : broadcast_(std::move(broadcast)),
        inputs_(std::move(inputs)),
        aligns_(std::move(aligns)),
        data_(inputs_.size()),
        epilogue_(epilogue),
        out_(out) {}

  void run(Slots& slots) override {
    for (std::size_t j = 0; j < inputs_.size(); ++j) data_[j] = slots[inputs_[j]].data.data();
    std::int8_t* y = slots[out_].data.data();
    broadcast_.for_each([&](std::int64_t i, const std::int64_t* offsets) {
      std::int64_t acc = 0;
      for (std::size_t j = 0; j < data_.size(); ++j)
        acc += std::int64_t{data_[j][offsets[j]]} * (std::int64_t{1} << aligns_[j]);
      y[i] = epilogue_(acc);
    });
  }

 private:
  Broadcast broadcast_;
  std::vector<SlotId> inputs_;
  std::vector<int> aligns_;
  std::vector<const std::int8_t*> data_;  // per-frame pointers, sized at load
  Epilogue epilogue_;
  SlotId out_;
};

class MulKernel final : public Kernel {
 public:
  MulKernel(Broadcast broadcast, SlotId a, SlotId b, Epilogue epilogue, SlotId out)
      : broadcast_(std::move(broadcast)), a_(a), b_(b), epilogue_(epilogue), out_(out) {}

  void run(Slots& slots) override {
    const std::int8_t* a = slots[a_].data.data();
    const std::int8_t* b = slots[b_].data.data();
    std::int8_t* y = slots[out_].data.data();
    broadcast_.for_each([&](std::int64_t i, const std::int64_t* offsets) {
      y[i] = epilogue_(std::int64_t{a[offsets[0]]} * b[offsets[1]]);
    });
  }

 private:
  Broadcast broadcast_;
  SlotId a_, b_;
  Epilogue epilogue_;
  SlotId out_;
};

class MulConstKernel final : public Kernel {
 public:
  MulConstKernel(Broadcast broadcast, SlotId x, std::vector<float> scale, Epilogue epilogue,
                 SlotId out)
      : broadcast_(std::move(broadcast)),
        x_(x),
        scale_(std::move(scale)),
        epilogue_(epilogue),
        out_(out) {}

  void run(Slots& slots) override {
    const QTensor& xt = slots[x_];
    std::int8_t* y = slots[out_].data.data();
    broadcast_.for_each([&](std::int64_t i, const std::int64_t* offsets) {
      const double x = dequantize(xt.data[static_cast<std::size_t>(offsets[0])], xt.fix_point);
      y[i] = epilogue_.from_value(x * double{scale_[static_cast<std::size_t>(offsets[1])]});
    });
  }

 private:
  Broadcast broadcast_;
  SlotId x_;
  std::vector<float> scale_;
  Epilogue epilogue_;
  SlotId out_;
};

}  // namespace

std::unique_ptr<Kernel> make_add(const Chain& chain, const Lowering& lowering) {
  const Op& op = chain.producer;
  const auto& producers = op.producers("input");
  if (producers.size() < 2) fail(op, "needs two or more inputs");
  std::vector<SlotId> inputs;
  std::vector<std::vector<std::int64_t>> shapes;
  int acc_exp = lowering.slot(lowering.arg_slot(op, "input", 0)).fix_point;
  for (std::size_t i = 0; i < producers.size(); ++i) {
    inputs.push_back(lowering.arg_slot(op, "input", i));
    const QTensor& t = lowering.slot(inputs.back());
    shapes.push_back(t.shape);
    acc_exp = std::max(acc_exp, t.fix_point);
  }
  std::vector<int> aligns;
  for (SlotId id : inputs) {
    aligns.push_back(acc_exp - lowering.slot(id).fix_point);
    if (aligns.back() > 32) fail(op, "input fix points differ by more than 32");
  }
  return std::make_unique<AddKernel>(Broadcast(op, lowering.slot(chain.out).shape, shapes),
                                     std::move(inputs), std::move(aligns), Epilogue(chain, acc_exp),
                                     chain.out);
}

std::unique_ptr<Kernel> make_mul(const Chain& chain, const Lowering& lowering) {
  const Op& op = chain.producer;
  const auto& producers = op.producers("input");
  if (producers.size() != 2) fail(op, "needs exactly two inputs");
  const auto& out_shape = lowering.slot(chain.out).shape;

  // The quantizer's average-pool correction: avgpool2d -> mul(float const) -> fix.
  for (std::size_t i = 0; i < 2; ++i) {
    const Op& pool = lowering.graph().op(producers[i]);
    if (pool.type != "avgpool2d") continue;
    const auto scale = lowering.raw_const(producers[1 - i]);
    if (!scale || scale->size() != 1)
      fail(op, "an avgpool2d operand needs a one-value float const beside it");
    return make_avgpool(chain, lowering, pool, scale->data());
  }

  // A fixed tensor times a float constant: a float op.
  for (std::size_t i = 0; i < 2; ++i) {
    auto scale = lowering.raw_const(producers[1 - i]);
    if (!scale) continue;
    const SlotId x = lowering.arg_slot(op, "input", i);
    const auto& scale_shape = lowering.graph().op(producers[1 - i]).output.shape;
    if (element_count(scale_shape) != static_cast<std::int64_t>(scale->size()))
      fail(op, "const '" + producers[1 - i] + "' has " + std::to_string(scale->size()) +
                   " values for shape " + shape_text(scale_shape));
    Broadcast broadcast(op, out_shape, {lowering.slot(x).shape, scale_shape});
    return std::make_unique<MulConstKernel>(std::move(broadcast), x, std::move(*scale),
                                            Epilogue(chain, 0), chain.out);
  }

  const SlotId a = lowering.arg_slot(op, "input", 0);
  const SlotId b = lowering.arg_slot(op, "input", 1);
  Broadcast broadcast(op, out_shape, {lowering.slot(a).shape, lowering.slot(b).shape});
  const int acc_exp = lowering.slot(a).fix_point + lowering.slot(b).fix_point;
  return std::make_unique<MulKernel>(std::move(broadcast), a, b, Epilogue(chain, acc_exp),
                                     chain.out);
}

}  // namespace dpushard::ref
