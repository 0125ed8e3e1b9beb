// Ops that move int8 values: concat (each input rescaled to the fix's fix_point with a
// DPU_ROUND shift, a copy when the fix points agree), and the layout ops reshape, flatten,
// squeeze, unsqueeze, identity (copies), transpose and stack (which keep the fix_point).

#include <algorithm>
#include <cstring>
#include <string>

#include "../lowering/epilogue.hpp"
#include "dpushard/graph/attr.hpp"
#include "kernels.hpp"

namespace dpushard::ref {

namespace {

std::int64_t normalized_axis(const Op& op, std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r)
    fail(op, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  return axis;
}

// Output viewed as [outer, sum of parts, ...]: each outer step takes `part` elements from
// every input in turn, rescaled by its shift.
class JoinKernel final : public Kernel {
 public:
  JoinKernel(std::vector<SlotId> inputs, std::vector<std::int64_t> parts, std::vector<int> shifts,
             std::int64_t outer, SlotId out)
      : inputs_(std::move(inputs)),
        parts_(std::move(parts)),
        shifts_(std::move(shifts)),
        outer_(outer),
        out_(out) {}

  void run(Slots& slots) override {
    std::int8_t* y = slots[out_].data.data();
    for (std::int64_t o = 0; o < outer_; ++o)
      for (std::size_t j = 0; j < inputs_.size(); ++j) {
        const std::int8_t* x = slots[inputs_[j]].data.data() + o * parts_[j];
        if (shifts_[j] == 0) {
          std::memcpy(y, x, static_cast<std::size_t>(parts_[j]));
        } else {
          for (std::int64_t i = 0; i < parts_[j]; ++i) y[i] = requantize_dpu(x[i], shifts_[j]);
        }
        y += parts_[j];
      }
  }

 private:
  std::vector<SlotId> inputs_;
  std::vector<std::int64_t> parts_;
  std::vector<int> shifts_;
  std::int64_t outer_;
  SlotId out_;
};

class CopyKernel final : public Kernel {
 public:
  CopyKernel(SlotId in, SlotId out) : in_(in), out_(out) {}
  void run(Slots& slots) override {
    std::copy(slots[in_].data.begin(), slots[in_].data.end(), slots[out_].data.begin());
  }

 private:
  SlotId in_, out_;
};

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(std::vector<std::int64_t> out_shape, std::vector<std::int64_t> in_strides,
                  SlotId in, SlotId out)
      : out_shape_(std::move(out_shape)),
        in_strides_(std::move(in_strides)),
        counters_(out_shape_.size(), 0),
        in_(in),
        out_(out) {}

  void run(Slots& slots) override {
    const std::int8_t* x = slots[in_].data.data();
    std::int8_t* y = slots[out_].data.data();
    const std::int64_t total = element_count(out_shape_);
    std::fill(counters_.begin(), counters_.end(), 0);
    std::int64_t offset = 0;
    for (std::int64_t i = 0; i < total; ++i) {
      y[i] = x[offset];
      for (std::size_t d = out_shape_.size(); d-- > 0;) {
        offset += in_strides_[d];
        if (++counters_[d] < out_shape_[d]) break;
        offset -= in_strides_[d] * out_shape_[d];
        counters_[d] = 0;
      }
    }
  }

 private:
  std::vector<std::int64_t> out_shape_;
  std::vector<std::int64_t> in_strides_;  // stride in the input of each output dimension
  std::vector<std::int64_t> counters_;
  SlotId in_, out_;
};

}  // namespace

std::unique_ptr<Kernel> make_concat(const Chain& chain, const Lowering& lowering) {
  const Op& op = chain.producer;
  if (chain.nonlinear != nullptr) fail(*chain.nonlinear, "cannot follow a concat before its fix");
  const auto& out_shape = lowering.slot(chain.out).shape;
  const std::int64_t axis = normalized_axis(op, int_attr(op.attrs, "axis", 0), out_shape.size());
  const auto axis_index = static_cast<std::size_t>(axis);
  const std::int64_t outer = element_count({out_shape.begin(), out_shape.begin() + axis});
  std::vector<SlotId> inputs;
  std::vector<std::int64_t> parts;
  std::vector<int> shifts;
  std::int64_t axis_total = 0;
  for (std::size_t i = 0; i < op.producers("input").size(); ++i) {
    inputs.push_back(lowering.arg_slot(op, "input", i));
    const QTensor& t = lowering.slot(inputs.back());
    if (t.shape.size() != out_shape.size())
      fail(op, "input " + shape_text(t.shape) + " and output " + shape_text(out_shape) +
                   " differ in rank");
    for (std::size_t d = 0; d < out_shape.size(); ++d)
      if (d != axis_index && t.shape[d] != out_shape[d])
        fail(op, "input " + shape_text(t.shape) + " does not fit output " + shape_text(out_shape));
    axis_total += t.shape[axis_index];
    parts.push_back(element_count(t.shape) / std::max<std::int64_t>(outer, 1));
    shifts.push_back(t.fix_point - chain.fp_out);
    if (shifts.back() < -48 || shifts.back() > 62) fail(op, "input fix point out of range");
  }
  if (inputs.empty() || axis_total != out_shape[axis_index])
    fail(op, "inputs do not add up to output " + shape_text(out_shape));
  return std::make_unique<JoinKernel>(std::move(inputs), std::move(parts), std::move(shifts), outer,
                                      chain.out);
}

std::unique_ptr<Kernel> make_layout(const Op& op, SlotId in, SlotId out, const Lowering& lowering) {
  const QTensor& x = lowering.slot(in);
  const QTensor& y = lowering.slot(out);
  if (element_count(x.shape) != element_count(y.shape))
    fail(op,
         "input " + shape_text(x.shape) + " and output " + shape_text(y.shape) + " differ in size");
  if (op.type == "reshape" || op.type == "flatten" || op.type == "squeeze" ||
      op.type == "unsqueeze" || op.type == "identity")
    return std::make_unique<CopyKernel>(in, out);
  if (op.type == "transpose") {
    const auto order = ints_attr(op.attrs, "order", "ref: op '" + op.name + "'");
    const std::size_t rank = x.shape.size();
    std::vector<std::int64_t> strides(rank, 1);
    for (std::size_t d = rank; d-- > 1;) strides[d - 1] = strides[d] * x.shape[d];
    std::vector<bool> seen(rank, false);
    std::vector<std::int64_t> out_shape, in_strides;
    if (order.size() != rank || y.shape.size() != rank) fail(op, "order does not fit the input");
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t source =
          order[d] < 0 ? order[d] + static_cast<std::int64_t>(rank) : order[d];
      if (source < 0 || source >= static_cast<std::int64_t>(rank) ||
          seen[static_cast<std::size_t>(source)])
        fail(op, "order is not a permutation of the input's dimensions");
      const auto s = static_cast<std::size_t>(source);
      seen[s] = true;
      if (y.shape[d] != x.shape[s])
        fail(op, "output " + shape_text(y.shape) + " is not input " + shape_text(x.shape) +
                     " permuted");
      out_shape.push_back(x.shape[s]);
      in_strides.push_back(strides[s]);
    }
    return std::make_unique<TransposeKernel>(std::move(out_shape), std::move(in_strides), in, out);
  }
  fail(op, "the ref backend cannot run this layout op");
}

std::unique_ptr<Kernel> make_stack(const Op& op, const std::vector<SlotId>& inputs, SlotId out,
                                   const Lowering& lowering) {
  const QTensor& y = lowering.slot(out);
  const std::int64_t axis = normalized_axis(op, int_attr(op.attrs, "axis", 0), y.shape.size());
  const std::int64_t outer = element_count({y.shape.begin(), y.shape.begin() + axis});
  std::vector<std::int64_t> parts;
  std::vector<int> shifts;
  const auto& first = lowering.slot(inputs.front()).shape;
  for (SlotId id : inputs) {
    const QTensor& t = lowering.slot(id);
    if (t.shape != first) fail(op, "inputs differ in shape");
    if (t.fix_point != y.fix_point) fail(op, "inputs differ in fix point");
    parts.push_back(element_count(t.shape) / std::max<std::int64_t>(outer, 1));
    shifts.push_back(0);
  }
  if (element_count(y.shape) != element_count(first) * static_cast<std::int64_t>(inputs.size()))
    fail(op, "output " + shape_text(y.shape) + " does not hold the stacked inputs");
  return std::make_unique<JoinKernel>(inputs, std::move(parts), std::move(shifts), outer, out);
}

}  // namespace dpushard::ref
