#pragma once
// Where a suite's models and plans live, and making the ones that are missing. The layout
// is shared with the Ansible models role (docs/benchmarking.md):
//   <models>/e<experts>-<input>-s<seed>/<family>-<size>_int.xmodel
//   <models>/e<experts>-<input>-s<seed>/<family>-<size>/n1/              1-node baseline
//   <models>/e<experts>-<input>-s<seed>/<family>-<size>/n<N>-<strategy>/
// (models without weights, --no-weights: in e<experts>-<input>-s<seed>-nw/)

#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/plan/plan_format.hpp"
#include "scaling/options.hpp"

namespace dpushard::bench {

// The folder of a model's plans; the model itself is this path + "_int.xmodel".
std::filesystem::path model_dir(const SweepOptions& o, const std::string& size);
std::filesystem::path plan_dir(const SweepOptions& o, const std::string& size, int nodes,
                               const std::string& strategy);

// Makes the zoo model (`dpushard zoo`'s generator) when its file is missing; returns it.
std::filesystem::path ensure_model(const SweepOptions& o, const std::string& size);

// Splits the model into the plan (as `dpushard split --nodes N --strategy S --link-gbps G`
// does) when the plan folder has no plan.yaml; returns the plan read back and checked
// against its files. `node_targets`: the targets of the cluster's first N nodes (cluster.yaml
// `target:`, "" for none); when one is not the reference board (--cost-target, else the
// KV260) the plan is made for them, as `split --target <cost> --node-targets ...` (and the
// Ansible models role) would.
Plan ensure_plan(const SweepOptions& o, const std::string& size, int nodes,
                 const std::string& strategy, double link_gbps,
                 const std::vector<std::string>& node_targets = {});

}  // namespace dpushard::bench
