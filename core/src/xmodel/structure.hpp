#pragma once
// Structural rules every xmodel obeys, checked when reading (so a damaged or truncated
// file is reported) and when writing (so the project never writes a file it cannot read).

#include <cstdint>
#include <limits>

#include "dpushard/graph/graph.hpp"

namespace dpushard::xmodel {

// Protobuf parses messages of at most 2 GiB - 1 bytes, so no xmodel file is larger.
inline constexpr std::uint64_t kMaxMessageBytes = std::numeric_limits<int>::max();

// At least one op; every arg names an op of the graph; and when the graph has a subgraph
// tree, its leaves hold every op exactly once and no subgraph names a missing op (XIR
// stores a subgraph's ops in its leaves). Throws dpushard::Error naming the op/subgraph.
void check_structure(const Graph& graph);

// The root XIR writes for an uncompiled graph: "root", every op in graph order, no
// attributes, no children. Such a root carries nothing beyond the op list, so the reader
// drops it (Graph::root() stays empty for `_int` files) and the writer recreates it.
Subgraph plain_root(const Graph& graph);
bool is_plain_root(const Subgraph& root, const Graph& graph);

}  // namespace dpushard::xmodel
