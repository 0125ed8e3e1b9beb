#pragma once
// A compiled-style graph for an `_int` fragment, laid out as vai_c_xir lays out a fragment
// that ends in output fix ops (VITIS_AI.md section 4, docs/vart.md): each input `data` op and
// its fix become one `data-fix` op (named as the input, its xint8 tensor named as the fix op,
// with its fix_point), every other op goes into one DPU subgraph unchanged, each output fix
// op's tensor becomes xint8 with its fix_point, and a `fix2float` op named "<output>_" reads it
// on the CPU. The DPU subgraph keeps the `_int` ops: the VART double computes with `ref` on
// the `_int` fragment itself, so only the boundary (names, shapes, fix points) must be right.

#include <cstdint>
#include <set>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard::vart_test {

Graph compile_equivalent(const Graph& int_graph);

// The same with the ops named in `cpu_ops` (and each fix op right after one) in a CPU subgraph
// after the DPU's, as vai_c_xir places ops the DPU cannot run after the last DPU layer: each
// DPU fix op they read becomes an xint8 tensor with its fix_point, and an output they compute
// gets no fix2float. The CPU ops stay `_int` ops, as the DPU subgraph's do.
Graph compile_equivalent(const Graph& int_graph, const std::set<std::string>& cpu_ops);

// `compiled` (compile_equivalent's output) with its CPU subgraphs' `_int` ops in the float form
// vai_c_xir gives them (VITIS_AI.md section 4; XIR 3.5's built_in_ops.cpp): each int8 tensor a
// CPU op reads (a DPU output, or a CPU fix) goes through a `fix2float` named "<tensor>_fix2float",
// each CPU fix op becomes a `float2fix` (same attributes, an xint8 tensor) and an output one gets
// a `fix2float` "<name>_" after it. With `float_outputs`, an output fix is left out instead: the
// float op before it leaves the model as float, as a classifier's final softmax does.
Graph with_float_cpu_ops(const Graph& compiled, bool float_outputs);

// `compiled` with every empty const-fix op given int8 values in its `data` attribute (where
// XIR keeps them; vai_c_xir leaves it empty and packs the weights for the DPU): weights
// drawn from `seed` with He's scale (normal, standard deviation sqrt(2 / fan-in), so that
// activations keep their size through the ReLU layers) at the tensor's fix_point, biases zero.
// Test weights, not the model's: they let a compiled file whose `_int` file is not at hand run
// through lower_compiled.
Graph with_test_weights(Graph compiled, std::uint64_t seed);

}  // namespace dpushard::vart_test
