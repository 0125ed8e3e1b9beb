#include "boundary.hpp"

#include <vector>

namespace dpushard::perf {
namespace {

bool is_conv_like(const std::string& type) {
  return type == "conv2d" || type == "depthwise-conv2d" || type == "matmul" ||
         type == "inner-product" || type == "transposed-conv2d";
}

// The output's value reaches the consumer as int8 already: a fix, or layout ops over one.
bool is_fixed_output(const Graph& graph, const Op* op) {
  for (int hops = 0; op != nullptr && hops < 64; ++hops) {
    if (op->type == "fix") return true;
    if (!is_layout_op(op->type)) return false;
    const auto& in = op->producers("input");
    if (in.empty()) return false;
    op = graph.find(in.front());
  }
  return false;
}

}  // namespace

std::set<std::string> trailing_unfixed_convs(const Graph& graph) {
  std::set<std::string> convs;
  for (const auto& name : trailing_unfixed_ops(graph))
    if (const Op* op = graph.find(name); op != nullptr && is_conv_like(op->type))
      convs.insert(name);
  return convs;
}

std::set<std::string> trailing_unfixed_ops(const Graph& graph) {
  std::set<std::string> ops;
  std::set<std::string> seen;
  std::vector<const Op*> stack;
  for (const Op* out : graph.outputs())
    if (out->type != "data" && !is_fixed_output(graph, out)) stack.push_back(out);
  while (!stack.empty()) {
    const Op* op = stack.back();
    stack.pop_back();
    if (!seen.insert(op->name).second) continue;
    if (op->type == "fix" || op->type == "data" || op->type == "const") continue;
    ops.insert(op->name);
    for (const auto& arg : op->args) {
      if (arg.name == "weights" || arg.name == "bias") continue;
      for (const auto& name : arg.producers)
        if (const Op* p = graph.find(name)) stack.push_back(p);
    }
  }
  return ops;
}

}  // namespace dpushard::perf
