#pragma once
// `dpushard run PLAN_DIR --cluster cluster.yaml`: the cluster half of the run command.
// cmd_run.cpp owns the command and its --local path; this file adds the cluster options
// and runs the plan on the workers.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frame_loop.hpp"

namespace dpushard::cli {

struct ClusterRunArgs {
  std::string cluster_file;  // empty: not a cluster run
  std::int64_t frames = 16;
  int inflight = 2;
  std::string out_file;
  bool shutdown_workers = false;
  double peer_timeout_s = 3.0;
  bool allow_cpu_subgraphs = false;   // compiled fragments: a surprise CPU op only warns
  std::string on_node_loss = "fail";  // fail | replan (docs/cluster.md "Losing a node")
  std::string model;                  // replan: the source model; empty: plan.yaml's
  bool frame_hashes = false;          // every frame's output sha256, in delivery order
};

// Adds --cluster, --frames, --inflight, --out, --shutdown-workers, --peer-timeout,
// --allow-cpu-subgraphs, --on-node-loss, --model and --frame-hashes to the `run` subcommand.
std::shared_ptr<ClusterRunArgs> add_cluster_run_options(CLI::App& run);

// Runs the plan in `plan_dir` on the cluster. `seed`, `json`, `inputs` (--input: one path
// per model input, as exec takes them; empty: seeded frames) and `output` (--output,
// --float, --top-k) are `run`'s own options. Returns the exit code: 0 only when every
// frame completed.
int run_cluster(const std::string& plan_dir, const ClusterRunArgs& args, std::uint64_t seed,
                bool json, const std::vector<std::string>& inputs, const OutputOptions& output);

}  // namespace dpushard::cli
