#pragma once
// Fragment files of a plan: the one check of a file against the sha256 the plan records,
// loading a fragment (its inputs and outputs must be those the plan records), and the wire
// form of a fragment, in which every output is int8 (wire_fragment).

#include <filesystem>
#include <string>
#include <string_view>

#include "dpushard/graph/graph.hpp"
#include "dpushard/plan/plan_format.hpp"

namespace dpushard {

// The bytes of `path`, a file the plan records with sha256 `recorded` (hex): it must exist,
// be a regular file and have that sha256. Throws one line starting with `what`, naming the
// path ("... is missing", "... has sha256 X, the plan records Y"). The one hash check of
// fragment and compiled files, for the local runner and the cluster alike.
std::string read_recorded_file(const std::filesystem::path& path, const std::string& recorded,
                               const std::string& what);

// A fragment as loaded from its plan folder: the file's bytes as written (hash checked) and
// the graph parsed from them, model-checked, with the inputs and outputs the plan records.
struct LoadedFragment {
  std::string bytes;
  Graph graph;
};
LoadedFragment read_fragment(const PlanFragment& fragment, const std::filesystem::path& dir);
Graph load_fragment(const PlanFragment& fragment, const std::filesystem::path& dir);

// Checks the plan against its folder: fragment files exist, their sha256 match, and their
// inputs and outputs are those the plan records.
void check_plan_files(const Plan& plan, const std::filesystem::path& dir);

// The suffix of the fix op the runtime appends to an unfixed output (docs/plan.md).
inline constexpr std::string_view kWireSuffix = "__wire";

// The wire form of `graph`, a fragment as loaded: every output the plan marks unfixed (a
// --no-output-fix plan's float value) gets a fix op NAME__wire with the output's fix_point
// and round_mode, so only int8 leaves the fragment, exactly what the reader's first fix
// makes of it. Returns whether it added any (a fragment whose outputs are all fixed is sent
// and run as written).
bool wire_fragment(Graph& graph, const PlanFragment& fragment);

// The plan's name for output `op` of a wired fragment: NAME for the NAME__wire fix that
// wire_fragment appended, the op's own name otherwise. The one way back from the wire.
std::string plan_output_name(const Graph& graph, const Op& op);

}  // namespace dpushard
