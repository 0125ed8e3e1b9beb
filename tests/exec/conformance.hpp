#pragma once
// The conformance test's one hook (backends_test.cpp): how a case reaches a backend that runs
// compiled files only (CompiledModels::Required). A program that has such a backend on a
// double sets it (tests/vart/conformance_on_double.cpp: each case's compiled equivalent, on
// the VART double). Without one, such a backend is handed the `_int` graph, declines it
// (BackendDescriptor::unsupported) and its cases are skipped.

#include <functional>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard::conformance {

struct CompiledForm {
  Graph graph;                // what the backend loads
  std::string output_suffix;  // its outputs are named ref's plus this ("_": fix2float's ops)
};

using Compiler = std::function<CompiledForm(const Graph& int_graph)>;

// The program's compiler; empty unless set (from a static initialiser: it is a function-local
// static, so the order of initialisation does not matter).
Compiler& compiler();

}  // namespace dpushard::conformance
