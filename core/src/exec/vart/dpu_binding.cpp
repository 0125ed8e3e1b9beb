// Finds the one DPU subgraph of a compiled fragment and binds its boundary tensors to the
// graph's inputs and outputs (dpu_binding.hpp).

#include "dpu_binding.hpp"

#include <unordered_map>
#include <unordered_set>

#include "dpushard/base/error.hpp"

namespace dpushard::vart_detail {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// XIR lists ops only in leaf subgraphs; a DPU subgraph has children of its own.
void collect_ops(const Subgraph& subgraph, const Subgraph* top,
                 std::unordered_map<std::string, const Subgraph*>& owner) {
  for (const auto& op : subgraph.ops) owner.emplace(op, top);
  for (const auto& child : subgraph.children) collect_ops(child, top, owner);
}

std::string describe(const Subgraph& subgraph) {
  const std::string device = subgraph.device();
  return (device.empty() ? "" : device + " ") + "subgraph '" + subgraph.name + "'";
}

// XIR names a tensor after its op unless the file says otherwise.
std::string tensor_name(const Op& op) { return op.output.name.empty() ? op.name : op.output.name; }

}  // namespace

DpuBinding bind_dpu_subgraph(const Graph& graph) {
  const std::string where = "vart: graph '" + graph.name() + "'";
  const auto& root = graph.root();
  if (!is_compiled(graph) || !root || root->children.empty())
    throw Error(where +
                " is not a compiled xmodel: compile the fragment for the DPU with vai_c_xir "
                "(docs/vart.md)");

  std::vector<const Subgraph*> dpus;
  std::vector<std::string> found;
  std::unordered_map<std::string, const Subgraph*> owner;
  for (const Subgraph& child : root->children) {
    found.push_back(child.device().empty() ? child.name : child.device() + " " + child.name);
    if (child.device() == "DPU") dpus.push_back(&child);
    collect_ops(child, &child, owner);
  }
  if (dpus.empty()) throw Error(where + ": no DPU subgraph (subgraphs: " + join(found) + ")");
  if (dpus.size() > 1) {
    std::vector<std::string> names;
    for (const Subgraph* s : dpus) names.push_back(s->name);
    throw Error(where + ": needs graph_runner: " + std::to_string(dpus.size()) +
                " DPU subgraphs (" + join(names) + ")");
  }
  const Subgraph* dpu = dpus.front();
  auto on_dpu = [&](const std::string& op) {
    const auto it = owner.find(op);
    return it != owner.end() && it->second == dpu;
  };
  auto place = [&](const std::string& op) {
    const auto it = owner.find(op);
    return it == owner.end() ? std::string("no subgraph") : describe(*it->second);
  };
  auto is_input = [](const Op& op) { return op.type == "data-fix" || op.type == "data"; };

  // Only the graph's inputs may feed the DPU subgraph: anything else runs on the CPU first.
  for (const Op& op : graph.ops()) {
    if (!on_dpu(op.name)) continue;
    for (const auto& producer : op.all_producers()) {
      const Op& source = graph.op(producer);
      if (!on_dpu(producer) && !is_input(source))
        throw Error(where + ": DPU subgraph '" + dpu->name + "' takes '" + producer + "' (" +
                    source.type + ") from " + place(producer) + ": needs graph_runner");
    }
  }

  DpuBinding binding;
  binding.subgraph = dpu->name;
  for (const Op* input : graph.inputs()) {
    const auto consumers = graph.consumers(input->name);
    if (consumers.empty()) throw Error(where + ": input '" + input->name + "' feeds no op");
    for (const Op* consumer : consumers)
      if (!on_dpu(consumer->name))
        throw Error(where + ": input '" + input->name + "' also feeds '" + consumer->name + "' (" +
                    consumer->type + ") in " + place(consumer->name) + ": needs graph_runner");
    const auto fix_point = fix_point_of(graph, input->name);
    if (!fix_point) throw Error(where + ": input '" + input->name + "' has no fix_point");
    binding.inputs.push_back({input->name, tensor_name(*input), input->output.shape, *fix_point});
  }
  if (binding.inputs.empty()) throw Error(where + ": no data-fix input");

  // Each output is a DPU tensor, or the fix2float the compiler puts after one on the CPU.
  for (const Op* output : graph.outputs()) {
    const Op* produced = on_dpu(output->name) ? output : nullptr;
    if (produced == nullptr && output->type == "fix2float") {
      const auto producers = output->all_producers();
      if (producers.size() == 1 && on_dpu(producers.front())) produced = &graph.op(producers[0]);
    }
    if (produced == nullptr)
      throw Error(where + ": output '" + output->name + "' is computed by '" + output->type +
                  "' in " + place(output->name) +
                  ", not by the DPU: end the fragment with an output fix op and recompile");
    const auto fix_point = fix_point_of(graph, produced->name);
    if (!fix_point) throw Error(where + ": DPU output '" + produced->name + "' has no fix_point");
    binding.outputs.push_back(
        {output->name, tensor_name(*produced), produced->output.shape, *fix_point});
  }
  if (binding.outputs.empty()) throw Error(where + ": no output");
  return binding;
}

}  // namespace dpushard::vart_detail
