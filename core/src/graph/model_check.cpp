// One validation on load for every command.

#include "dpushard/graph/model_check.hpp"

#include <algorithm>

#include "dpushard/graph/shape.hpp"

namespace dpushard {

void validate_loaded(Graph& graph) {
  if (is_compiled(graph)) {
    graph.topological_order();  // producers exist, no cycles
    return;
  }
  // `_int` files written by other tools may omit shapes; compiled files always carry them.
  const bool missing = std::any_of(graph.ops().begin(), graph.ops().end(),
                                   [](const Op& op) { return op.output.shape.empty(); });
  if (missing) infer_shapes(graph);
  validate(graph);
}

}  // namespace dpushard
