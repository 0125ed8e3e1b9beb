#include "ref_backend.hpp"

#include <algorithm>
#include <string>

#include "dpushard/base/error.hpp"
#include "kernels.hpp"

namespace dpushard {

namespace {

class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "ref"; }

  void load(const Graph& graph) override {
    program_ = lowering::lower_graph(graph, ref::kernel_set());
    loaded_ = true;
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    if (!loaded_) throw Error("ref: run() before load()");
    return lowering::run_program(program_, inputs, "ref");
  }

 private:
  lowering::Program program_;
  bool loaded_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_ref_backend(const BackendOptions& /*options*/) {
  return std::make_unique<RefBackend>();
}

BackendDescriptor ref_backend_descriptor() {
  BackendDescriptor d;
  d.name = "ref";
  d.summary =
      "the host CPU, plain loops: the DPU's exact arithmetic every backend is checked against";
  d.traits = {CompiledModels::Lowered, DeviceKind::HostCpu, false, false, true};
  d.make = &make_ref_backend;
  return d;
}

}  // namespace dpushard
