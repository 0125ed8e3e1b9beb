// The input checks every backend makes before it runs a frame.
#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/shape.hpp"

namespace dpushard {

void check_input(std::string_view who, const std::string& name,
                 const std::vector<std::int64_t>& shape, int fix_point, const QTensor& input) {
  const std::string what = std::string(who) + ": input '" + name + "'";
  if (input.shape != shape)
    throw Error(what + " has shape " + shape_text(input.shape) + ", expected " + shape_text(shape));
  if (input.fix_point != fix_point)
    throw Error(what + " has fix_point " + std::to_string(input.fix_point) + ", expected " +
                std::to_string(fix_point));
  if (static_cast<std::int64_t>(input.data.size()) != element_count(shape))
    throw Error(what + " holds " + std::to_string(input.data.size()) + " values, its shape needs " +
                std::to_string(element_count(shape)));
}

void check_input_count(std::string_view who, std::size_t given, std::size_t expected) {
  if (given != expected)
    throw Error(std::string(who) + ": got " + std::to_string(given) + " inputs, the graph has " +
                std::to_string(expected));
}

}  // namespace dpushard
