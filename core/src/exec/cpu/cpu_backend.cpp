// The `cpu` backend: the shared lowering with ref's kernels, the heavy ones swapped for
// oneDNN (conv, matmul) and vectorised (add, maxpool) kernels where they apply.

#include "dpushard/exec/cpu_backend.hpp"

#include <omp.h>

#include <algorithm>
#include <string>

#include "../lowering/lower.hpp"
#include "../ref/kernels.hpp"
#include "cpu_description.hpp"
#include "dnnl_kernels.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard {

namespace {

// A chain is validated by building its ref kernel first (ref's one-line errors, the same
// in both backends); the fast kernel replaces it where one applies, else ref's runs.
lowering::ChainKernelFactory preferring(lowering::ChainKernelFactory fast,
                                        lowering::ChainKernelFactory reference) {
  return [fast = std::move(fast), reference = std::move(reference)](
             const lowering::Chain& chain, const lowering::Lowering& lowering) {
    auto reference_kernel = reference(chain, lowering);
    if (auto kernel = fast(chain, lowering)) return kernel;
    return reference_kernel;
  };
}

lowering::KernelSet cpu_kernel_set() {
  lowering::KernelSet set = ref::kernel_set();
  set.conv = preferring(cpu::make_dnnl_conv, set.conv);
  set.matmul = preferring(cpu::make_dnnl_matmul, set.matmul);
  set.add = preferring(cpu::make_fast_add, set.add);
  set.maxpool = cpu::make_fast_maxpool;  // pool_geometry() validates; it always applies
  return set;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads) {
    if (threads_ < 1)
      throw Error("cpu: threads must be at least 1, got " + std::to_string(threads));
  }

  std::string_view name() const override { return "cpu"; }

  void load(const Graph& graph) override {
    omp_set_num_threads(threads_);
    program_ = lowering::lower_graph(graph, cpu_kernel_set());
    loaded_ = true;
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    if (!loaded_) throw Error("cpu: run() before load()");
    // OpenMP's thread count is per calling thread: set it for whichever thread runs us.
    omp_set_num_threads(threads_);
    return lowering::run_program(program_, inputs, "cpu");
  }

 private:
  int threads_;
  lowering::Program program_;
  bool loaded_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options.threads);
}

void register_cpu_backend() {
  BackendDescriptor d = cpu_backend_description();
  d.make = &make_cpu_backend;
  register_backend(std::move(d));
}

}  // namespace dpushard
