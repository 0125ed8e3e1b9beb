#include "ref_backend.hpp"

#include <algorithm>
#include <string>

#include "dpushard/error.hpp"
#include "kernels.hpp"

namespace dpushard {

namespace {

class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "ref"; }

  void load(const Graph& graph) override {
    plan_ = lowering::lower_graph(graph, ref::kernel_set());
    loaded_ = true;
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    if (!loaded_) throw Error("ref: run() before load()");
    return lowering::run_plan(plan_, inputs, "ref");
  }

 private:
  lowering::Plan plan_;
  bool loaded_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_ref_backend(const BackendOptions& /*options*/) {
  return std::make_unique<RefBackend>();
}

}  // namespace dpushard
