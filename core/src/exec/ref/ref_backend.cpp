#include "ref_backend.hpp"

#include <algorithm>
#include <string>

#include "dpushard/error.hpp"
#include "planner.hpp"

namespace dpushard {

namespace {

class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "ref"; }

  void load(const Graph& graph) override {
    plan_ = ref::lower_graph(graph);
    loaded_ = true;
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    if (!loaded_) throw Error("ref: run() before load()");
    if (inputs.size() != plan_.inputs.size())
      throw Error("ref: got " + std::to_string(inputs.size()) + " inputs, the graph has " +
                  std::to_string(plan_.inputs.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      QTensor& slot = plan_.slots[plan_.inputs[i]];
      const QTensor& input = inputs[i];
      if (input.shape != slot.shape)
        throw Error("ref: input '" + slot.name + "' has shape " + ref::shape_text(input.shape) +
                    ", expected " + ref::shape_text(slot.shape));
      if (input.fix_point != slot.fix_point)
        throw Error("ref: input '" + slot.name + "' has fix_point " +
                    std::to_string(input.fix_point) + ", expected " +
                    std::to_string(slot.fix_point));
      if (input.data.size() != slot.data.size())
        throw Error("ref: input '" + slot.name + "' holds " + std::to_string(input.data.size()) +
                    " values, its shape needs " + std::to_string(slot.data.size()));
      std::copy(input.data.begin(), input.data.end(), slot.data.begin());
    }
    for (auto& kernel : plan_.kernels) kernel->run(plan_.slots);
    std::vector<QTensor> outputs;
    outputs.reserve(plan_.outputs.size());
    for (ref::SlotId id : plan_.outputs) outputs.push_back(plan_.slots[id]);
    return outputs;
  }

 private:
  ref::Plan plan_;
  bool loaded_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_ref_backend(const BackendOptions& /*options*/) {
  return std::make_unique<RefBackend>();
}

}  // namespace dpushard
