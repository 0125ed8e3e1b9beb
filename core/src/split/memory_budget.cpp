// A fragment's memory need on its board (docs/splitting.md, "Memory budgets"): shapes only,
// so fragments extracted without weights and models written without them are priced alike.
#include "dpushard/split/memory_budget.hpp"

#include <algorithm>
#include <unordered_map>

#include "dpushard/graph/cost.hpp"

namespace dpushard {

FragmentMemory fragment_memory(const Graph& fragment, int frames_in_flight) {
  FragmentMemory m;
  m.frames_in_flight = std::max(1, frames_in_flight);
  const GraphCost cost = graph_cost(fragment);
  m.weight_bytes = cost.weight_bytes;
  m.code_bytes =
      (cost.activation_bytes + kActivationBytesPerCodeByte - 1) / kActivationBytesPerCodeByte;

  // Inputs and outputs: one int8 per element (as PlanTensor::wire_bytes counts them).
  std::unordered_map<std::string, bool> io;
  for (const Op* op : fragment.inputs()) {
    m.io_bytes += op->output.element_count();
    for (const Op* fix : fragment.consumers(op->name)) io[fix->name] = true;
  }
  for (const Op* op : fragment.outputs()) {
    m.io_bytes += op->output.element_count();
    io[op->name] = true;
  }

  // The largest live set: sweep the ops in topological order; an activation (an op whose
  // output the DPU stores, op_cost().activation_bytes) lives from its producer to its last
  // reader, a reader through layout ops (reshape, ...) counting as the ops that read those.
  const auto order = fragment.topological_order();
  const auto& ops = fragment.ops();
  std::vector<std::size_t> position(ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::vector<std::int64_t> bytes(ops.size(), 0);
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (!io.count(ops[i].name)) bytes[i] = op_cost(fragment, ops[i]).activation_bytes;
  std::vector<std::size_t> last_use(ops.size(), 0);
  for (std::size_t k = order.size(); k-- > 0;) {
    const std::size_t i = order[k];
    last_use[i] = k;
    for (const Op* reader : fragment.consumers(ops[i].name)) {
      const auto r = static_cast<std::size_t>(reader - ops.data());
      const bool stores = op_cost(fragment, *reader).activation_bytes > 0;
      last_use[i] = std::max(last_use[i], stores ? position[r] : last_use[r]);
    }
  }
  std::vector<std::int64_t> delta(order.size() + 1, 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (bytes[i] == 0) continue;
    delta[position[i]] += bytes[i];
    delta[last_use[i] + 1] -= bytes[i];
  }
  std::int64_t live = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    live += delta[k];
    m.live_bytes = std::max(m.live_bytes, live);
  }
  return m;
}

}  // namespace dpushard
