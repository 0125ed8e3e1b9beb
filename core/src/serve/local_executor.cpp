// The in-process executor: a pool of LocalPlanRunners, one frame each at a time.

#include "dpushard/serve/local_executor.hpp"

#include <chrono>
#include <mutex>
#include <utility>

#include "dpushard/base/error.hpp"

namespace dpushard {

namespace {

ServedTensor served(const PlanTensor& t) { return {t.name, t.shape, t.fix_point, t.round_mode}; }

}  // namespace

LocalExecutor::LocalExecutor(const Plan& plan, const std::filesystem::path& dir,
                             const LocalRunOptions& options, int runners) {
  if (runners < 1) throw Error("serve: the number of runners must be at least 1");
  model_.name = plan.model_name;
  for (const auto& t : plan.model_inputs) model_.inputs.push_back(served(t));
  for (const auto& t : plan.model_outputs) model_.outputs.push_back(served(t));
  for (int i = 0; i < runners; ++i) {
    runners_.push_back(std::make_unique<LocalPlanRunner>(plan, dir, options));
    idle_.push_back(runners_.back().get());
  }
  stats_.node = "local";
}

LocalExecutor::~LocalExecutor() = default;

std::vector<QTensor> LocalExecutor::infer(const std::vector<QTensor>& inputs) {
  LocalPlanRunner* runner = nullptr;
  {
    std::unique_lock lock(mutex_);
    runner_freed_.wait(lock, [&] { return !idle_.empty(); });
    runner = idle_.back();
    idle_.pop_back();
  }
  // Hands the runner back whatever happens, so a failed frame never shrinks the pool.
  struct Release {
    LocalExecutor& self;
    LocalPlanRunner* runner;
    ~Release() {
      {
        std::lock_guard lock(self.mutex_);
        self.idle_.push_back(runner);
      }
      self.runner_freed_.notify_one();
    }
  } release{*this, runner};
  const auto start = std::chrono::steady_clock::now();
  std::vector<QTensor> outputs = runner->run(inputs);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::uint64_t in = 0, out = 0;
  for (const auto& t : inputs) in += t.data.size();
  for (const auto& t : outputs) out += t.data.size();
  std::lock_guard lock(mutex_);
  stats_.busy_seconds += seconds;
  stats_.frames += 1;
  stats_.bytes_in += in;
  stats_.bytes_out += out;
  return outputs;
}

std::vector<NodeStats> LocalExecutor::node_stats() const {
  std::lock_guard lock(mutex_);
  return {stats_};
}

}  // namespace dpushard
