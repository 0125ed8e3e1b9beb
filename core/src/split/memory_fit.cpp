#include "memory_fit.hpp"

#include "dpushard/split/memory_budget.hpp"

namespace dpushard::split {

PartitionFit partition_fit(const Extraction& extraction, const Partition& partition,
                           int frames_in_flight, std::int64_t budget_bytes,
                           const std::string& board, const std::vector<std::int64_t>& budgets,
                           const std::vector<std::string>& boards) {
  PartitionFit fit;
  std::vector<FragmentNeed> needs;
  for (std::size_t f = 0; f < partition.fragments.size(); ++f) {
    const std::int64_t bytes =
        fragment_memory(extraction.fragments[f].graph, frames_in_flight).total_bytes();
    fit.fragment_bytes.push_back(bytes);
    needs.push_back({partition.fragments[f].name, partition.fragments[f].nodes, bytes});
  }
  fit.misfit = memory_misfit(needs, budgets, boards, budget_bytes, board);
  return fit;
}

}  // namespace dpushard::split
