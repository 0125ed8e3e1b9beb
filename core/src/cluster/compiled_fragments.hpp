#pragma once
// Which file each node runs: the `_int` fragment on nodes without a DPU (ref, cpu, sim), the
// fragment compiled for the node's DPU (the plan's `compiled:` entry) on `vart` nodes. A
// compiled fragment built for another DPU than the one the node reported in its handshake
// is refused before anything is uploaded (docs/cluster.md).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "job_layout.hpp"

namespace dpushard::cluster {

// Reads every compiled file the plan records and checks its sha256; nullopt where a
// fragment has none. Throws dpushard::Error naming the fragment and file.
std::vector<std::optional<WireFragment>> read_compiled_fragments(
    const Plan& plan, const std::filesystem::path& plan_dir);

// Whether a node that runs `backend` on `device` runs compiled fragments.
bool runs_compiled(const std::string& backend, const DeviceInfo& device);

// Makes node slot `node` (named `node_name`) run the compiled file of each of its fragments
// when runs_compiled(backend, device): its assignments get the compiled hash and the file
// joins layout.fragments. Throws dpushard::Error with one line naming the node, the
// fragment and both fingerprints when they differ, or saying what is missing (a fragment
// without a compiled file; a DPU backend that reports no fingerprint).
void use_compiled_fragments(const Plan& plan, JobLayout& layout, int node,
                            const std::string& node_name, const std::string& backend,
                            const DeviceInfo& device);

}  // namespace dpushard::cluster
