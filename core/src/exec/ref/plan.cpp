#include "plan.hpp"

#include "dpushard/error.hpp"

namespace dpushard::ref {

void fail(const Op& op, const std::string& what) {
  throw Error("ref: op '" + op.name + "' (" + op.type + "): " + what);
}

std::int64_t count_of(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) count *= dim;
  return count;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(shape[i]);
  }
  return text + "]";
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

}  // namespace dpushard::ref
