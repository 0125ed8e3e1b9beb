#pragma once
// The boundary rule (VITIS_AI.md section 4): a fragment whose output is not produced by a
// fix (quantize) op makes the compiler move its trailing ops to the CPU (convolutions
// about 60x slower); an explicit output fix keeps every conv on the DPU.

#include <set>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard::perf {

// Names of the conv-like ops (conv2d, depthwise-conv2d, matmul, inner-product) on the
// unfixed chains that feed the graph's fix-less outputs: walking back from each output
// through non-fix ops until fix ops are reached. Layout ops over a fix count as fixed.
std::set<std::string> trailing_unfixed_convs(const Graph& graph);
// Every op on those chains (convs, eltwise adds, pooling, nonlinears, layout ops): the
// compiler leaves all of them on the CPU (the split oracle's output_not_fixed rule).
std::set<std::string> trailing_unfixed_ops(const Graph& graph);

}  // namespace dpushard::perf
