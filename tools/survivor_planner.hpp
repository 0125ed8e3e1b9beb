#pragma once
// The planner of `run --on-node-loss replan`: the split the run's plan was made with,
// asked again for the nodes that survive a loss (docs/cluster.md, "Losing a node"). It lives
// with the command line so the cluster module needs no planner: the orchestrator calls it
// through cluster::Replanner.

#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/cluster/cluster.hpp"
#include "dpushard/graph/graph.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/split/oracle.hpp"

namespace dpushard::cli {

class SurvivorPlanner {
 public:
  // Finds the model the plan was split from: `model` when given, else plan.yaml's
  // model.file as recorded, then that name in the plan folder and beside it; its sha256
  // must be the plan's. Throws dpushard::Error with one line saying what is missing.
  SurvivorPlanner(const Plan& plan, const std::filesystem::path& plan_dir, const std::string& model,
                  int inflight);
  ~SurvivorPlanner();  // removes the plan folders it wrote
  SurvivorPlanner(const SurvivorPlanner&) = delete;
  SurvivorPlanner& operator=(const SurvivorPlanner&) = delete;

  // The plan for plan slots `nodes` of the run's plan (the cluster's first nodes), with its
  // objective, bounds, link, cost model, memory budget and node targets: the requested
  // strategy, else auto. nullopt with `why` when none fits.
  std::optional<cluster::PlanOnNodes> plan_for(const std::vector<std::size_t>& nodes,
                                               std::string& why);
  // Starts planning, on a thread of their own, every set of all nodes but one, so the
  // first loss finds its plan made.
  void prepare_ahead();
  const std::filesystem::path& model_path() const { return model_path_; }

 private:
  struct Outcome {
    std::optional<cluster::PlanOnNodes> plan;
    std::string why;
  };
  // Node sets with the same count and targets get the same plan.
  std::string key_of(const std::vector<std::size_t>& nodes) const;
  std::shared_future<Outcome> start(const std::vector<std::size_t>& nodes);
  Outcome make(const std::vector<std::size_t>& nodes);

  const Plan plan_;
  std::filesystem::path model_path_;
  Graph model_;
  std::unique_ptr<Oracle> oracle_;  // null: the built-in one
  int inflight_ = 2;
  std::filesystem::path scratch_;  // the plan folders written
  std::mutex mutex_;               // cache_ and next_folder_
  std::mutex planning_;            // one split at a time: the machine's cores serve frames
  std::map<std::string, std::shared_future<Outcome>> cache_;
  int next_folder_ = 0;
};

}  // namespace dpushard::cli
