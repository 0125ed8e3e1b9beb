#pragma once
// plan.yaml: writing a plan and reading it strictly (docs/plan.md).

#include <filesystem>
#include <string>

#include "dpushard/plan/plan_format.hpp"

namespace dpushard {

// Writes `dir`/plan.yaml atomically.
void write_plan(const Plan& plan, const std::filesystem::path& dir);
std::string plan_to_yaml(const Plan& plan);
// Reads `dir`/plan.yaml (or the file itself) and checks it is consistent in itself;
// throws dpushard::Error with one line naming the field at fault.
Plan read_plan(const std::filesystem::path& dir_or_file);
Plan plan_from_yaml(const std::string& text, const std::string& origin);

}  // namespace dpushard
