#pragma once
// How many DPU and CPU subgraphs the compiler would make of a graph: each one costs a
// launch per frame (Target::per_subgraph_us).

#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard::perf {

enum class Where {
  Weight,  // const and its fix: not part of the dataflow
  Free,    // costs nothing, joins whichever side it touches
  Dpu,
  Cpu,
};

struct SubgraphCount {
  int dpu = 0;
  int cpu = 0;
};

// `_int` graphs: connected groups of DPU ops (through free ops, never through a CPU op),
// split so that no path leaves a group through a CPU op and comes back to it; likewise of
// CPU ops. `where` is indexed like graph.ops().
SubgraphCount count_subgraphs(const Graph& graph, const std::vector<Where>& where);

// Compiled graphs: the children of the root subgraph with device DPU, and those with
// device CPU that hold at least one op placed Cpu in `where` (a lone fix2float is part of
// the per-frame overhead, as in `_int` graphs).
SubgraphCount count_compiled_subgraphs(const Graph& graph, const std::vector<Where>& where);

}  // namespace dpushard::perf
