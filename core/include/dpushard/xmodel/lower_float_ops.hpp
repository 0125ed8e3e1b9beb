#pragma once
// XIR's float ops in a compiled model's CPU subgraphs, lowered to the `_int` ops the ref and cpu
// backends run (docs/xmodel.md, "Float ops in CPU subgraphs").
//
// vai_c_xir leaves what the DPU cannot run as XIR float ops on the CPU (VITIS_AI.md section 4,
// Xilinx/Vitis-AI #821): `fix2float` after each DPU output read there, the float op (`softmax`,
// `sigmoid`, `add`, `concat`, `reshape`, ...), and `float2fix` where the value goes back to int8.
// The ops, their arguments and attributes are XIR 3.5's built-in op definitions
// (src/vai_runtime/xir/src/xir/op/built_in_ops.cpp):
//   fix2float: x * 2^-fix_point, exact in float, so it reads as the int8 tensor it converts;
//   float2fix: clamp(round(x * 2^fix_point)), round_mode STD_ROUND / DPU_ROUND / PY3_ROUND, 8-bit
//     signed: the `_int` form's `fix` (the value it hands on is the same int8);
//   softmax (axis), sigmoid, relu, relu6, leaky-relu (alpha), hard-sigmoid, hard-swish, gelu,
//   add, mul (broadcasting),
//   concat (axis), reshape (shape), flatten (start_axis, end_axis), squeeze (axis),
//   transpose (order), identity: the `_int` ops of the same names and attributes.
// A float op then a float2fix is the `_int` chain `op -> fix`: bit-exact with the `_int` model
// it was compiled from. A float op whose value leaves the model as float (no float2fix after it)
// is handed out as int8 at a fix_point chosen from its range, DPU_ROUND (float_output_fix_point).
// Anything else is a one-line dpushard::Error naming the op.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

// Whether `type` is one of the float CPU ops above (fix2float and float2fix included).
bool is_float_cpu_op(std::string_view type);

// Appends to `out` the `_int` ops computing float op `op`, whose producers `out` already holds
// under the names `op`'s arguments give. The value keeps `op`'s name. `is_output`: nothing in
// the model reads it, so it leaves the model (and, unless it is int8 already, gets a fix).
void lower_float_cpu_op(const Op& op, bool is_output, Graph& out);

// The fix_point a float output of `op` is handed out at: 7 for softmax, sigmoid and
// hard-sigmoid (their values lie in [0, 1]; 1.0 reads as 127/128), the input's for relu,
// relu6, leaky-relu, hard-swish and gelu, the smallest of the inputs' for concat, one less for add
// (a sum may double), the sum of the inputs' less 7 for mul. `inputs`: the fix_points of `op`'s
// inputs.
int float_output_fix_point(const Op& op, const std::vector<int>& inputs);

// A float32 value of the lowered graph (the float side of an XIR op before its fix), as
// lower_compiled.cpp's DPU ops and the float CPU ops here make them.
TensorDesc float32_value(std::string name, std::vector<std::int64_t> shape);

}  // namespace dpushard
