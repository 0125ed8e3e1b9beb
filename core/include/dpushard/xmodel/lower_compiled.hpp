#pragma once
// Lowering a compiled xmodel (vai_c_xir output: `*-fix` ops, a subgraph tree) to the `_int`
// form the ref backend runs (docs/xmodel.md, "Computing a compiled file").
//
// Every compiled op becomes the `_int` ops with the same arithmetic: `data-fix` -> data + fix,
// `const-fix` -> const + fix, `conv2d-fix` / `depthwise-conv2d-fix` -> conv [+ relu, relu6,
// leaky-relu from `nonlinear`] + fix, `eltwise-fix` ADD -> add [+ activation] + fix,
// `pool-fix` -> maxpool2d / avgpool2d + fix, `concat-fix` -> concat + fix, `reshape-fix` ->
// reshape, `upload` / `download` / `fix2float` -> identity (dpushard moves the int8 values, as
// the vart backend does), and the float ops of CPU subgraphs as lower_float_ops.hpp says
// (`float2fix` -> fix, `softmax`, `sigmoid`, `add`, `concat`, `reshape`, ... as they are). Each fix
// takes the fix_point of the compiled op's output tensor. The int8 value of compiled op X is the
// lowered op named X, so the lowered graph has the compiled graph's inputs and outputs, names
// included; the ops inside a chain are named "X/conv2d", "X/relu", ...
//
// Weights: a `const-fix` op's values are its `data` attribute (XIR's place for them). vai_c_xir
// leaves it empty and packs the weights into the DPU subgraph's parameters in the DPU's own
// order, which dpushard does not read; then they are taken from `int_graph`, the `_int` file the
// compiled one was made from: its const of the same name (or the name without the compiler's
// "(reshaped)" suffix) with the same number of values and the same fix_point.
//
// An op type, attribute or attribute value this does not know, a missing weight, or a
// fix_point it cannot find is a one-line dpushard::Error naming the op; nothing is guessed.

#include "dpushard/graph/graph.hpp"

namespace dpushard {

Graph lower_compiled(const Graph& compiled, const Graph* int_graph = nullptr);

}  // namespace dpushard
