#pragma once
// Loading one fragment of a plan: the file exists, its sha256 is the recorded one, and its
// inputs and outputs are those the plan records.

#include <filesystem>

#include "dpushard/graph.hpp"
#include "dpushard/plan_format.hpp"

namespace dpushard {

Graph load_fragment(const Plan& plan, const PlanFragment& fragment,
                    const std::filesystem::path& dir);

// Checks the plan against its folder: fragment files exist, their sha256 match, and their
// inputs and outputs are those the plan records.
void check_plan_files(const Plan& plan, const std::filesystem::path& dir);

}  // namespace dpushard
