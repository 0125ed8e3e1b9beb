#include "null_backend.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"

namespace dpushard::testing {
namespace {

class NullBackend final : public Backend {
 public:
  explicit NullBackend(const BackendOptions& options) {
    const auto settings = backend_settings("null", options);  // its own option: fill
    const int fill = std::stoi(settings.at("fill"));
    if (fill < -128 || fill > 127)
      throw Error("null: fill must be an int8 value, not " + settings.at("fill"));
    fill_ = static_cast<std::int8_t>(fill);
  }

  std::string_view name() const override { return "null"; }

  void load(const Graph& graph) override {
    specs_ = input_specs(graph);
    outputs_.clear();
    for (const Op* op : graph.outputs()) {
      QTensor t;
      t.name = op->name;
      t.shape = op->output.shape;
      t.fix_point = fix_point_of(graph, op->name).value_or(0);
      t.data.assign(static_cast<std::size_t>(op->output.element_count()), fill_);
      t.computed = false;
      outputs_.push_back(std::move(t));
    }
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    check_input_count("null", inputs.size(), specs_.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
      check_input("null", specs_[i].name, specs_[i].shape, specs_[i].fix_point, inputs[i]);
    return outputs_;
  }

 private:
  std::int8_t fill_ = 0;
  std::vector<QTensor> specs_;
  std::vector<QTensor> outputs_;
};

}  // namespace

void register_null_backend() {
  BackendDescriptor d;
  d.name = "null";
  d.summary = "nothing: outputs of the right shapes, one value, not computed (tests only)";
  d.traits = {CompiledModels::Lowered, DeviceKind::HostCpu, false, false, false};
  d.options = {
      {"fill", "--null-fill", "null: the int8 value every output holds", "0", false, true}};
  d.make = [](const BackendOptions& options) { return std::make_unique<NullBackend>(options); };
  register_backend(std::move(d));
}

}  // namespace dpushard::testing
