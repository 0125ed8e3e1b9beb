#pragma once
// Whether a candidate partition fits its nodes' memory (docs/splitting.md "Memory budgets").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "extract.hpp"
#include "partition.hpp"

namespace dpushard::split {

struct PartitionFit {
  std::vector<std::int64_t> fragment_bytes;  // fragment_memory().total_bytes(), partition order
  std::optional<std::string> misfit;         // the first node over budget, as memory_misfit
};

// Needs of `extraction`'s fragments (with or without weights) placed as `partition` places
// them, against `budgets[n]` on node n (named `boards[n]`; `budget_bytes` and `board` for
// nodes past their end).
PartitionFit partition_fit(const Extraction& extraction, const Partition& partition,
                           int frames_in_flight, std::int64_t budget_bytes,
                           const std::string& board, const std::vector<std::int64_t>& budgets = {},
                           const std::vector<std::string>& boards = {});

}  // namespace dpushard::split
