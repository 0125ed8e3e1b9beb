#pragma once
// The output fix operator at the graph level. A layout op (reshape, flatten, ...) over a
// fixed value carries no fix of its own; where one must end a fragment (a model output, a
// requested cut), an explicit fix with the fix_point of the value it moves is inserted
// after it. Re-quantizing int8 values on their own grid is exact, so results are identical.

#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/plan/plan_format.hpp"

namespace dpushard::split {

// Model outputs that are layout ops over a fixed value.
std::vector<std::string> unfixed_layout_outputs(const Graph& model);

// A copy of `model` in which every op of `layout_ops` is renamed NAME__layout and followed
// by a fix named NAME (so readers and output names are unchanged). Records one
// "inserted_fix" adjustment per op. Throws when an op is not a layout op over a fixed value.
Graph insert_output_fixes(const Graph& model, const std::vector<std::string>& layout_ops,
                          std::vector<PlanAdjustment>& adjustments, const std::string& why);

}  // namespace dpushard::split
