#pragma once
// Checks the fragments vai_c_xir compiled against the plan they came from, before anything
// runs (docs/plan.md, "Compiled fragments"): the file is the one recorded (sha256), its
// boundary tensors (names, shapes, fix points) are the plan's, its subgraphs are where the
// oracle put them (a CPU subgraph the oracle did not predict is an error naming the op, or a
// warning when allowed), and its DPU subgraphs were compiled for the recorded DPU (and the
// target's, when one is given).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/plan/plan_format.hpp"

namespace dpushard {

struct CompiledCheckOptions {
  bool allow_cpu_subgraphs = false;      // a surprise CPU op is a warning, not an error
  std::uint64_t target_fingerprint = 0;  // the DPU that will run it; 0: not checked
};

// The DPU fingerprint every DPU subgraph of `compiled` carries (`dpu_fingerprint`). Throws
// dpushard::Error naming `what` when the graph is not compiled, has no DPU subgraph, a DPU
// subgraph without the attribute, or DPU subgraphs for different DPUs.
std::uint64_t compiled_fingerprint(const Graph& compiled, const std::string& what);

// Checks `compiled` against `fragment` (whose `compiled` entry must be set). Returns the
// warnings (one line each); throws dpushard::Error with one line naming the fragment on the
// first fault.
std::vector<std::string> check_compiled_fragment(const PlanFragment& fragment,
                                                 const Graph& compiled,
                                                 const CompiledCheckOptions& options = {});

// Every fragment of the plan with a `compiled` entry: reads the file from `dir`, checks its
// sha256, then check_compiled_fragment. Returns the warnings; throws on the first fault.
std::vector<std::string> check_compiled_plan(const Plan& plan, const std::filesystem::path& dir,
                                             const CompiledCheckOptions& options = {});

// Whether any fragment of the plan records a compiled file.
bool has_compiled_fragments(const Plan& plan);

}  // namespace dpushard
