// Running a plan in one process: fragments in plan order, tensors handed over by edge.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/plan/fragment_io.hpp"
#include "dpushard/plan/local_run.hpp"
#include "dpushard/plan/plan_check.hpp"

namespace dpushard {

LocalPlanRunner::LocalPlanRunner(const Plan& plan, const std::filesystem::path& dir,
                                 const LocalRunOptions& options)
    : plan_(plan) {
  check_plan(plan);
  for (const auto& f : plan.fragments) graphs_.push_back(load_fragment(f, dir));
  BackendOptions backend_options;
  backend_options.threads = options.threads;
  for (std::size_t k = 0; k < plan.fragments.size(); ++k) {
    // A --no-output-fix output is a float value: it is quantized on the way out exactly as
    // the reader's first fix does, as on a cluster, so int8 is handed over.
    wire_fragment(graphs_[k], plan.fragments[k]);
    backends_.push_back(make_backend(options.backend, backend_options));
    backends_.back()->load(graphs_[k]);
  }
}

std::optional<Preprocessing> LocalPlanRunner::preprocessing() const {
  for (const Graph& g : graphs_)
    if (auto p = recorded_preprocessing(g)) return p;
  return std::nullopt;
}

std::vector<QTensor> LocalPlanRunner::run(const std::vector<QTensor>& inputs) {
  const Plan& plan = plan_;
  if (inputs.size() != plan.model_inputs.size())
    throw Error("run: the plan takes " + std::to_string(plan.model_inputs.size()) +
                " inputs, got " + std::to_string(inputs.size()));
  std::map<std::pair<std::string, std::string>, QTensor> values;  // (fragment, output)
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& want = plan.model_inputs[i];
    if (inputs[i].shape != want.shape || inputs[i].fix_point != want.fix_point)
      throw Error("run: input " + std::to_string(i) + " ('" + want.name +
                  "') has another shape or fix_point than the model's");
    QTensor t = inputs[i];
    t.name = want.name;
    values[{"model", want.name}] = std::move(t);
  }
  auto feed = [&](const std::string& to, const std::string& input) -> QTensor {
    for (const auto& e : plan.edges)
      if (e.to == to && e.input == input) {
        auto it = values.find({e.from, e.output});
        if (it == values.end())
          throw Error("run: '" + e.from + ":" + e.output + "' is not computed before '" + to + "'");
        QTensor t = it->second;
        t.name = input;
        return t;
      }
    throw Error("run: no edge feeds '" + to + ":" + input + "'");
  };

  for (std::size_t k = 0; k < plan.fragments.size(); ++k) {
    const PlanFragment& f = plan.fragments[k];
    const Graph& g = graphs_[k];
    std::vector<QTensor> ins;
    for (const auto& t : f.inputs) ins.push_back(feed(f.name, t.name));
    std::vector<QTensor> outs = backends_[k]->run(ins);
    const auto produced = g.outputs();
    if (outs.size() != produced.size())
      throw Error("run: fragment '" + f.name + "' returned " + std::to_string(outs.size()) +
                  " outputs, expected " + std::to_string(produced.size()));
    for (std::size_t i = 0; i < outs.size(); ++i) {
      values[{f.name, plan_output_name(g, *produced[i])}] = std::move(outs[i]);
    }
  }
  std::vector<QTensor> result;
  for (const auto& t : plan.model_outputs) result.push_back(feed("model", t.name));
  return result;
}

std::vector<QTensor> run_plan_locally(const Plan& plan, const std::filesystem::path& dir,
                                      const std::vector<QTensor>& inputs,
                                      const LocalRunOptions& options) {
  return LocalPlanRunner(plan, dir, options).run(inputs);
}

}  // namespace dpushard
