// The `cpu` backend: ref's plan with the heavy kernels swapped for oneDNN ones.

#include "dpushard/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <string>

#include "../ref/planner.hpp"
#include "dnnl_kernels.hpp"
#include "dpushard/error.hpp"

namespace dpushard {

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {
    if (threads_ < 1)
      throw Error("cpu: threads must be at least 1, got " + std::to_string(threads));
  }

  std::string_view name() const override { return "cpu"; }

  void load(const Graph& graph) override {
    omp_set_num_threads(threads_);
    plan_ = ref::lower_graph(graph, {cpu::make_dnnl_conv, cpu::make_dnnl_matmul, cpu::make_fast_add,
                                     cpu::make_fast_maxpool});
    loaded_ = true;
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    if (!loaded_) throw Error("cpu: run() before load()");
    if (inputs.size() != plan_.inputs.size())
      throw Error("cpu: got " + std::to_string(inputs.size()) + " inputs, the graph has " +
                  std::to_string(plan_.inputs.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      QTensor& slot = plan_.slots[plan_.inputs[i]];
      const QTensor& input = inputs[i];
      if (input.shape != slot.shape)
        throw Error("cpu: input '" + slot.name + "' has shape " + ref::shape_text(input.shape) +
                    ", expected " + ref::shape_text(slot.shape));
      if (input.fix_point != slot.fix_point)
        throw Error("cpu: input '" + slot.name + "' has fix_point " +
                    std::to_string(input.fix_point) + ", expected " +
                    std::to_string(slot.fix_point));
      if (input.data.size() != slot.data.size())
        throw Error("cpu: input '" + slot.name + "' holds " + std::to_string(input.data.size()) +
                    " values, its shape needs " + std::to_string(slot.data.size()));
      std::copy(input.data.begin(), input.data.end(), slot.data.begin());
    }
    // OpenMP's thread count is per calling thread: set it for whichever thread runs us.
    omp_set_num_threads(threads_);
    for (auto& kernel : plan_.kernels) kernel->run(plan_.slots);
    std::vector<QTensor> outputs;
    outputs.reserve(plan_.outputs.size());
    for (ref::SlotId id : plan_.outputs) outputs.push_back(plan_.slots[id]);
    return outputs;
  }

 private:
  int threads_;
  ref::Plan plan_;
  bool loaded_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options.threads);
}

void register_cpu_backend() { register_backend("cpu", make_cpu_backend); }

}  // namespace dpushard
