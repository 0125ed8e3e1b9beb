#pragma once
// What each op of an `_int` graph is for the splitter: a constant (weights and the ops that
// only combine constants), a free layout op (reshape & co. over a fixed value, re-executed
// in every fragment that reads it), an activation fix (a legal cut point), or compute.

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard::split {

struct OpClasses {
  std::vector<bool> constant;        // no `data` op upstream
  std::vector<bool> free_layout;     // layout op over fixed values, not a model output
  std::vector<bool> activation_fix;  // a fix op over a non-constant value
  std::vector<bool> consumed;        // some op reads it
};

OpClasses classify_ops(const Graph& graph);

// Index of the op named `name` in graph.ops(); throws naming it when missing.
std::size_t op_index(const Graph& graph, std::string_view name);

// Ops that compute something the compiler must place (not data, const, fix, constants).
bool is_placeable(const Op& op, bool constant);

// Ops whose outputs the model returns: graph.outputs() without constants, as indices.
std::vector<std::size_t> model_output_indices(const Graph& graph, const OpClasses& classes);

}  // namespace dpushard::split
