#include "program.hpp"

#include <algorithm>

#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"

namespace dpushard::lowering {

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

std::vector<QTensor> run_program(Program& program, const std::vector<QTensor>& inputs,
                                 std::string_view backend) {
  check_input_count(backend, inputs.size(), program.inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    QTensor& slot = program.slots[program.inputs[i]];
    const QTensor& input = inputs[i];
    check_input(backend, slot.name, slot.shape, slot.fix_point, input);
    std::copy(input.data.begin(), input.data.end(), slot.data.begin());
  }
  for (auto& kernel : program.kernels) kernel->run(program.slots);
  std::vector<QTensor> outputs;
  outputs.reserve(program.outputs.size());
  for (SlotId id : program.outputs) outputs.push_back(program.slots[id]);
  return outputs;
}

}  // namespace dpushard::lowering
