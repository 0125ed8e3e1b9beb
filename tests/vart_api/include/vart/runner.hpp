// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx VART's vart/runner.hpp,
// reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vart/tensor_buffer.hpp"

namespace xir {
class Subgraph;
}  // namespace xir

namespace vart {

template <typename InputType, typename OutputType = InputType>
class BaseRunner {
 public:
  virtual ~BaseRunner() = default;
  virtual std::pair<std::uint32_t, int> execute_async(InputType input, OutputType output) = 0;
  virtual int wait(int jobid, int timeout = -1) = 0;
};

class Runner : public BaseRunner<const std::vector<TensorBuffer*>&> {
 public:
  static std::unique_ptr<Runner> create_runner(const xir::Subgraph* subgraph,
                                               const std::string& mode = std::string(""));

  virtual ~Runner() = default;
  virtual std::pair<uint32_t, int> execute_async(const std::vector<TensorBuffer*>& input,
                                                 const std::vector<TensorBuffer*>& output) = 0;
  virtual int wait(int jobid, int timeout) = 0;
  virtual std::vector<const xir::Tensor*> get_input_tensors() = 0;
  virtual std::vector<const xir::Tensor*> get_output_tensors() = 0;
};

}  // namespace vart
