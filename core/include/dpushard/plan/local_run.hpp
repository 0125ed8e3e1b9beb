#pragma once
// Running a plan in this process: its fragments in plan order on one backend, tensors
// handed over by edge (`dpushard run` without --cluster).

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/preprocessing.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/plan/plan_format.hpp"

namespace dpushard {

struct LocalRunOptions {
  std::string backend = "ref";
  int threads = 1;
};
// A plan's fragments loaded once on their own backends, then run frame after frame.
class LocalPlanRunner {
 public:
  // Validates the folder and loads every fragment.
  LocalPlanRunner(const Plan& plan, const std::filesystem::path& dir,
                  const LocalRunOptions& options = {});
  // The model's outputs in order for `inputs` (the model's inputs in order).
  std::vector<QTensor> run(const std::vector<QTensor>& inputs);
  // The preprocessing block recorded with the model, as its fragments carry it.
  std::optional<Preprocessing> preprocessing() const;

 private:
  Plan plan_;
  std::vector<Graph> graphs_;
  std::vector<std::unique_ptr<Backend>> backends_;
};

// Runs the plan's fragments in plan order in this process on `inputs` (the model's inputs
// in order) and returns the model's outputs in order. Validates the folder first.
std::vector<QTensor> run_plan_locally(const Plan& plan, const std::filesystem::path& dir,
                                      const std::vector<QTensor>& inputs,
                                      const LocalRunOptions& options = {});

}  // namespace dpushard
