#include "plan.hpp"

#include <algorithm>

#include "dpushard/error.hpp"
#include "dpushard/shape.hpp"

namespace dpushard::ref {

void fail(const Op& op, const std::string& what) {
  throw Error("ref: op '" + op.name + "' (" + op.type + "): " + what);
}

SlotId Lowering::arg_slot(const Op& op, std::string_view arg, std::size_t index) const {
  const auto& producers = op.producers(arg);
  if (index >= producers.size())
    fail(op, "missing input " + std::to_string(index) + " of arg '" + std::string(arg) + "'");
  return fixed(op, producers[index]);
}

std::optional<SlotId> Lowering::optional_arg_slot(const Op& op, std::string_view arg,
                                                  std::size_t index) const {
  const auto& producers = op.producers(arg);
  if (index >= producers.size()) return std::nullopt;
  return fixed(op, producers[index]);
}

std::vector<QTensor> run_plan(Plan& plan, const std::vector<QTensor>& inputs,
                              std::string_view backend) {
  const std::string who(backend);
  if (inputs.size() != plan.inputs.size())
    throw Error(who + ": got " + std::to_string(inputs.size()) + " inputs, the graph has " +
                std::to_string(plan.inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    QTensor& slot = plan.slots[plan.inputs[i]];
    const QTensor& input = inputs[i];
    if (input.shape != slot.shape)
      throw Error(who + ": input '" + slot.name + "' has shape " + shape_text(input.shape) +
                  ", expected " + shape_text(slot.shape));
    if (input.fix_point != slot.fix_point)
      throw Error(who + ": input '" + slot.name + "' has fix_point " +
                  std::to_string(input.fix_point) + ", expected " + std::to_string(slot.fix_point));
    if (input.data.size() != slot.data.size())
      throw Error(who + ": input '" + slot.name + "' holds " + std::to_string(input.data.size()) +
                  " values, its shape needs " + std::to_string(slot.data.size()));
    std::copy(input.data.begin(), input.data.end(), slot.data.begin());
  }
  for (auto& kernel : plan.kernels) kernel->run(plan.slots);
  std::vector<QTensor> outputs;
  outputs.reserve(plan.outputs.size());
  for (SlotId id : plan.outputs) outputs.push_back(plan.slots[id]);
  return outputs;
}

}  // namespace dpushard::ref
