#pragma once
// Loading one fragment of a plan: the file exists, its sha256 is the recorded one, and its
// inputs and outputs are those the plan records.

#include <filesystem>

#include "dpushard/graph.hpp"
#include "dpushard/plan.hpp"

namespace dpushard::split {

Graph load_fragment(const Plan& plan, const PlanFragment& fragment,
                    const std::filesystem::path& dir);

}  // namespace dpushard::split
