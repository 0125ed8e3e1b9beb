#pragma once
// What the real XIR sees in a graph, as a dpushard::Graph: every op (type, attributes, args,
// output tensor), the graph's attributes and the subgraph tree, read through XIR's public API
// only. Tests compare it with what dpushard's own reader makes of the same bytes, and the
// VART double reads the DPU subgraph it is asked to run through it.

#include <xir/graph/graph.hpp>
#include <xir/graph/subgraph.hpp>

#include <set>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard::vart_test {

// XIR's attribute value as dpushard's variant; throws dpushard::Error on a C++ type XIR
// stores that the xmodel format has no field for.
AttrValue attr_from_xir(const xir::any& value);

// Every attribute of an XIR Attrs (an op's, tensor's, subgraph's or graph's).
AttrMap attrs_from_xir(const xir::Attrs* attrs);

// The subgraph and its descendants, children sorted by name (XIR keeps them in a set).
Subgraph subgraph_from_xir(const xir::Subgraph& subgraph);

// The whole graph: ops in XIR's topological order, the root subgraph when it has children.
Graph graph_from_xir(const xir::Graph& graph);

// For each op, the defaults of its XIR op definition's optional attributes: XIR fills these
// in when a file leaves them out, so they show in its view without being in the file.
StringMap<AttrMap> op_defaults_from_xir(const xir::Graph& graph);

// The names of the ops whose type XIR does not define: for those XIR made a definition on the
// fly (register_customized_operator_definition, annotated "This operator is not defined by
// XIR."), with one arg `input` and the attributes `shape` and `data_type`.
std::set<std::string> ops_xir_does_not_define(const xir::Graph& graph);

}  // namespace dpushard::vart_test
