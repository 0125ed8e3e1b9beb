#pragma once
// Shape inference and validation of `_int` graphs.

#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

// A shape as messages and reports print it: "[1,224,224,3]".
std::string shape_text(const std::vector<std::int64_t>& shape);

// The number of elements of a shape (1 for a scalar).
std::int64_t element_count(const std::vector<std::int64_t>& shape);

// Op types the `_int` form may contain (and so that the executors must run).
bool is_known_int_op(std::string_view type);

// Output shape of `op` from its producers' shapes and its attributes. Throws
// dpushard::Error naming the op when inputs are missing or inconsistent.
std::vector<std::int64_t> infer_output_shape(const Graph& graph, const Op& op);

// Sets every op's output shape in topological order. An op whose stored shape (from a
// file) differs from the inferred one is an error naming the op and both shapes.
void infer_shapes(Graph& graph);

// Checks an `_int` graph: producers exist, no cycles, known op types, required args and
// attributes, fix attributes in range (bit_width 8, known round_mode), shapes consistent.
// Throws dpushard::Error with one line naming the op and the problem.
void validate(const Graph& graph);

}  // namespace dpushard
