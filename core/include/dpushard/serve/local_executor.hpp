#pragma once
// `serve --local`: requests run on the plan in this process (LocalPlanRunner), on
// `runners` copies of it so that many frames can be in flight at once.

#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "dpushard/plan/local_run.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/serve/inference_executor.hpp"

namespace dpushard {

class LocalExecutor final : public InferenceExecutor {
 public:
  // Loads the plan's fragments `runners` times (each runner serves one frame at a time).
  LocalExecutor(const Plan& plan, const std::filesystem::path& dir, const LocalRunOptions& options,
                int runners);
  ~LocalExecutor() override;

  const ServedModel& model() const override { return model_; }
  bool ready() const override { return true; }
  int max_in_flight() const override { return static_cast<int>(runners_.size()); }
  std::vector<QTensor> infer(const std::vector<QTensor>& inputs) override;
  std::vector<NodeStats> node_stats() const override;

 private:
  ServedModel model_;
  std::vector<std::unique_ptr<LocalPlanRunner>> runners_;
  std::vector<LocalPlanRunner*> idle_;
  mutable std::mutex mutex_;
  std::condition_variable runner_freed_;
  NodeStats stats_;  // the one node: this process
};

}  // namespace dpushard
