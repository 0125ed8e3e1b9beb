// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx VART's
// vart/runner_ext.hpp, reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <vector>

#include <vart/runner.hpp>

namespace vart {

class RunnerExt : public vart::Runner {
 public:
  virtual ~RunnerExt() = default;
  virtual std::vector<vart::TensorBuffer*> get_inputs() = 0;
  virtual std::vector<vart::TensorBuffer*> get_outputs() = 0;
};

}  // namespace vart
