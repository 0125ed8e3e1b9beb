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
    // OpenMP's thread count is per calling thread: set it for whichever thread runs us.
    omp_set_num_threads(threads_);
    return ref::run_plan(plan_, inputs, "cpu");
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
