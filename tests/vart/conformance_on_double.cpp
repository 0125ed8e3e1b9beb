// The conformance test (tests/exec/backends_test.cpp) with vart on the VART double: a backend
// that runs compiled files only gets each case's compiled equivalent (compile_equivalent.hpp),
// and the double computes it from the case's `_int` graph.

#include "exec/conformance.hpp"
#include "vart/compile_equivalent.hpp"
#include "vart/double/vart_double.hpp"

namespace dpushard {
namespace {

[[maybe_unused]] const bool compiler_set = [] {
  conformance::compiler() = [](const Graph& int_graph) {
    vart_double::Settings settings;
    settings.int_graph = int_graph;
    vart_double::set_settings(settings);
    // vai_c_xir's outputs are the fix2float ops after the DPU subgraph: "<output>_".
    return conformance::CompiledForm{vart_test::compile_equivalent(int_graph), "_"};
  };
  return true;
}();

}  // namespace
}  // namespace dpushard
