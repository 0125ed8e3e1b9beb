#pragma once
// Lowers an `_int` graph into the ref backend's plan, as the DPU compiler does: each fix op
// closes a chain `producer [-> activation] -> fix` that becomes one integer kernel; weights
// (const -> fix) are quantized to int8 once here.

#include "plan.hpp"

namespace dpushard::ref {

// Throws dpushard::Error naming the op the ref backend cannot run.
Plan lower_graph(const Graph& graph);

}  // namespace dpushard::ref
