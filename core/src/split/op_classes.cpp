#include "op_classes.hpp"

namespace dpushard::split {

std::size_t op_index(const Graph& graph, std::string_view name) {
  const Op& op = graph.op(name);
  return static_cast<std::size_t>(&op - graph.ops().data());
}

bool is_placeable(const Op& op, bool constant) {
  return !constant && op.type != "data" && op.type != "fix" && op.type != "const";
}

OpClasses classify_ops(const Graph& graph) {
  const auto& ops = graph.ops();
  const std::size_t n = ops.size();
  OpClasses c;
  c.constant.assign(n, false);
  c.free_layout.assign(n, false);
  c.activation_fix.assign(n, false);
  c.consumed.assign(n, false);
  for (const auto& op : ops)
    for (const auto& p : op.all_producers())
      if (const Op* q = graph.find(p)) c.consumed[static_cast<std::size_t>(q - ops.data())] = true;

  for (std::size_t i : graph.topological_order()) {
    const Op& op = ops[i];
    bool all_constant = op.type != "data";
    bool over_fixed = true;  // every producer is constant, an activation fix or free layout
    for (const auto& p : op.all_producers()) {
      const std::size_t j = op_index(graph, p);
      if (!c.constant[j]) all_constant = false;
      if (!c.constant[j] && !c.activation_fix[j] && !c.free_layout[j]) over_fixed = false;
    }
    c.constant[i] = all_constant;
    if (all_constant) continue;
    if (op.type == "fix") c.activation_fix[i] = true;
    // A layout op that is a model output stays with its producer's fragment.
    if (is_layout_op(op.type) && over_fixed && c.consumed[i]) c.free_layout[i] = true;
  }
  return c;
}

std::vector<std::size_t> model_output_indices(const Graph& graph, const OpClasses& classes) {
  std::vector<std::size_t> out;
  for (const Op* op : graph.outputs()) {
    const std::size_t i = static_cast<std::size_t>(op - graph.ops().data());
    if (!classes.constant[i]) out.push_back(i);
  }
  return out;
}

}  // namespace dpushard::split
