#pragma once
// Checking a plan in itself (against its folder: check_plan_files in fragment_io.hpp).

#include "dpushard/plan/plan_format.hpp"

namespace dpushard {

// Checks the plan's structure: known fragments and tensors in edges, every input fed once,
// matching shapes and fix points, plan order, the memory budget. Throws naming the fragment
// or edge.
void check_plan(const Plan& plan);

}  // namespace dpushard
