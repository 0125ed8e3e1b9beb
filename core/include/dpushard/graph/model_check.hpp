#pragma once
// The check every command runs on a model it reads (inspect, predict, exec, split, the
// orchestrator before an upload, a worker before it runs a fragment), so no command accepts
// what another refuses.

#include "dpushard/graph/graph.hpp"

namespace dpushard {

// An `_int` graph gets the shapes it omits inferred and must pass validate() (producers,
// no cycles, known op types, consistent shapes, fix attributes); a compiled graph (XIR's
// DPU op types) must form a DAG of known producers. Throws dpushard::Error naming the op.
void validate_loaded(Graph& graph);

}  // namespace dpushard
