#pragma once
// Running a plan in this process: its fragments in plan order on one backend, tensors
// handed over by edge (`dpushard run` without --cluster).

#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/plan_format.hpp"
#include "dpushard/tensor.hpp"

namespace dpushard {

struct LocalRunOptions {
  std::string backend = "ref";
  int threads = 1;
};
// Runs the plan's fragments in plan order in this process on `inputs` (the model's inputs
// in order) and returns the model's outputs in order. Validates the folder first.
std::vector<QTensor> run_plan_locally(const Plan& plan, const std::filesystem::path& dir,
                                      const std::vector<QTensor>& inputs,
                                      const LocalRunOptions& options = {});

}  // namespace dpushard
