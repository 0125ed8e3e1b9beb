#pragma once
// How a plan becomes one job on a cluster: the bytes each fragment is shipped as, one
// slot per (fragment, node) instance, and the routing table of every instance (where
// each of its outputs goes). Model inputs are routed the same way from the orchestrator.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/net/protocol.hpp"
#include "dpushard/plan/plan_format.hpp"

namespace dpushard::cluster {

struct WireFragment {
  std::shared_ptr<const std::string> bytes;  // what the worker runs
  net::Digest sha{};
};

struct InputRoute {
  std::size_t model_input = 0;  // index into plan.model_inputs
  net::Destination destination;
  // A replicate plan's frame_share (replica_cycle): frame f goes to replica
  // cycle[f mod size]; empty: destination.target_for(f), replica f mod R.
  std::vector<std::uint32_t> cycle;

  const net::Target& target_for(std::uint64_t frame) const {
    if (cycle.empty()) return destination.target_for(frame);
    return destination.replicas[cycle[static_cast<std::size_t>(frame % cycle.size())]];
  }
};

struct JobLayout {
  // Per plan fragment, then the compiled files nodes with a DPU run (compiled_fragments.hpp).
  std::vector<WireFragment> fragments;
  std::vector<std::optional<WireFragment>> compiled;                // per plan fragment
  std::map<int, std::vector<net::FragmentAssignment>> assignments;  // per node slot
  std::map<int, std::vector<std::string>> fragment_names;           // per node slot
  std::vector<InputRoute> inputs;
};

// `node_names[i]` is the cluster name of plan node slot i. Reads every fragment file and
// checks its sha256 against the plan. A fragment with an unfixed output (a
// --no-output-fix plan) is shipped with a fix op appended to that output, exactly as the
// local runner does (wire_fragment, dpushard/plan/fragment_io.hpp), so only int8 values travel.
JobLayout make_job_layout(const Plan& plan, const std::filesystem::path& plan_dir,
                          const std::vector<std::string>& node_names);

}  // namespace dpushard::cluster
