#pragma once
// Op types dpushard writes that XIR 3.5 does not define (only `layernorm`), and the form the
// file gives them so that the real XIR reads it. For a type it does not define, XIR makes a
// definition on the fly (register_customized_operator_definition, xir/util/tool_function.cpp):
// one arg `input` (REPEATED) and the REQUIRED attributes `shape` (vector<int32>, the output
// tensor's dims) and `data_type` (string, XIR's spelling such as "FLOAT32"). Any other arg
// name aborts XIR's reader, and an OpDef in the file does not help (XIR 3.5 drops them).
//
// So the writer puts such an op's operands into `input`, in a fixed order (layernorm: input,
// gamma, beta), and adds the two attributes; the reader turns that form back into the named
// args and drops the two attributes, so the IR (docs/ir.md) does not change. Files written
// before (layernorm with `gamma` and `beta` args) are read as they are. docs/xmodel.md,
// "Op types XIR does not define".

#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard::xmodel {

// The operand names of an op type XIR does not define, in the order the file lists them in
// `input`; nullptr for any other type (XIR's built-ins, and types dpushard never writes).
const std::vector<std::string>* automatic_operands(std::string_view type);

// XIR's spelling of a tensor's data type (xir::DataType::to_string): "FLOAT32", "XINT8", ...
std::string xir_data_type_spelling(DataType type, std::int32_t bit_width);

// The op as the file holds it: for a type of automatic_operands() with its named args, the
// operands in `input` plus `shape` and `data_type`; an op already in that form (read from a
// file whose form did not match exactly) is written as it is. Returns false and leaves `out`
// alone for every other type. Throws dpushard::Error naming the op when it has neither form
// (an operand missing or repeated, another arg, `shape` or `data_type` set with named args).
bool to_automatic_form(const Op& op, Op& out);

// The reverse, in place: an op of such a type whose only arg is `input` with one producer
// per operand, whose `shape` is its output tensor's dims and whose `data_type` is XIR's
// spelling of its output's type gets its named args back and loses the two attributes. Any
// other op (the old form with named args, another tool's op of that type) stays as it is.
void from_automatic_form(Op& op);

}  // namespace dpushard::xmodel
