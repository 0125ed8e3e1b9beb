// Memory budgets of node slots (memory_misfit). Needs nothing but plan_format.hpp, so the
// plan.yaml fuzzer links it with check_plan.
#include <cstdio>
#include <map>

#include "dpushard/plan/plan_memory.hpp"

namespace dpushard {

std::string memory_text(std::int64_t bytes) {
  char buf[64];
  const double mib = static_cast<double>(bytes) / (1 << 20);
  if (mib >= 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", mib / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", mib);
  }
  return buf;
}

std::optional<std::string> memory_misfit(const std::vector<FragmentNeed>& fragments,
                                         std::int64_t budget_bytes, const std::string& board) {
  return memory_misfit(fragments, {}, {}, budget_bytes, board);
}

std::optional<std::string> memory_misfit(const std::vector<FragmentNeed>& fragments,
                                         const std::vector<std::int64_t>& budgets,
                                         const std::vector<std::string>& boards,
                                         std::int64_t default_bytes,
                                         const std::string& default_board) {
  std::map<int, std::vector<const FragmentNeed*>> on_node;
  for (const auto& f : fragments)
    for (int n : f.nodes) on_node[n].push_back(&f);
  for (const auto& [node, held] : on_node) {
    std::int64_t total = 0;
    const FragmentNeed* largest = nullptr;
    for (const FragmentNeed* f : held) {
      total += f->bytes;
      if (largest == nullptr || f->bytes > largest->bytes) largest = f;
    }
    const auto at = static_cast<std::size_t>(node);
    const std::int64_t budget_bytes = at < budgets.size() ? budgets[at] : default_bytes;
    const std::string& board = at < boards.size() ? boards[at] : default_board;
    if (budget_bytes <= 0 || total <= budget_bytes) continue;
    const std::string budget =
        "node " + std::to_string(node) + " (" + board + ") has " + memory_text(budget_bytes);
    if (held.size() == 1)
      return "fragment '" + largest->name + "' needs " + memory_text(largest->bytes) + " but " +
             budget + " for models";
    std::string others;
    for (const FragmentNeed* f : held)
      if (f != largest) others += (others.empty() ? "'" : ", '") + f->name + "'";
    return "fragment '" + largest->name + "' needs " + memory_text(largest->bytes) + " and with " +
           others + " " + memory_text(total) + " in all, but " + budget + " for models";
  }
  return std::nullopt;
}

std::optional<std::string> memory_misfit(const Plan& plan) {
  if (plan.memory.budget_bytes <= 0 && plan.memory.node_budget_bytes.empty()) return std::nullopt;
  std::vector<FragmentNeed> needs;
  for (const auto& f : plan.fragments) needs.push_back({f.name, f.nodes, f.cost.memory_bytes});
  return memory_misfit(needs, plan.memory.node_budget_bytes, plan.node_targets,
                       plan.memory.budget_bytes, plan.memory.board);
}

}  // namespace dpushard
