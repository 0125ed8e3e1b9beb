#pragma once
// Helpers of the split tests: running a whole model and a split plan on the ref backend,
// and small hand-built graphs with known structure.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/plan/local_run.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/split.hpp"

namespace dpushard::testing {

// The whole model on the ref backend with exec's seeded inputs.
inline std::vector<QTensor> run_whole(const Graph& model, std::uint64_t seed) {
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(model))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, seed));
  auto backend = make_backend("ref");
  backend->load(model);
  return backend->run(inputs);
}

// Splits, writes the plan folder, reads it back and runs it in plan order.
inline std::vector<QTensor> run_split(const Graph& model, const SplitOptions& options,
                                      const std::filesystem::path& dir, std::uint64_t seed,
                                      Plan* written = nullptr) {
  SplitResult result = split_model(model, options);
  const Plan plan = write_split(result, dir);
  const Plan read = read_plan(dir);
  EXPECT_EQ(read, plan) << "plan.yaml does not read back as written";
  if (written != nullptr) *written = read;
  std::vector<QTensor> inputs;
  for (const auto& t : read.model_inputs)
    inputs.push_back(random_qtensor(t.name, t.shape, t.fix_point, seed));
  return run_plan_locally(read, dir, inputs);
}

// The planner settings the invariant tests run for every node count: every strategy and
// objective, some without the output fix. One node is one fragment whatever the settings,
// so there only the first is run.
struct SplitVariant {
  std::string strategy;
  Objective objective;
  bool output_fix;
};
inline const std::vector<SplitVariant>& split_variants() {
  static const std::vector<SplitVariant> variants = {
      {"experts", Objective::Latency, true},     {"experts", Objective::Throughput, false},
      {"pipeline", Objective::Throughput, true}, {"pipeline", Objective::Latency, false},
      {"replicate", Objective::Latency, true},   {"auto", Objective::Latency, true},
      {"auto", Objective::Throughput, true},
  };
  return variants;
}
inline SplitOptions split_options(const SplitVariant& v, int nodes) {
  SplitOptions o;
  o.nodes = nodes;
  o.strategy = v.strategy;
  o.objective = v.objective;
  o.output_fix = v.output_fix;
  return o;
}
// "resnet18 pipeline on 3 --no-output-fix", for failure messages.
inline std::string describe(const std::string& model, const SplitVariant& v, int nodes) {
  return model + " " + v.strategy + " on " + std::to_string(nodes) +
         (v.output_fix ? "" : " --no-output-fix");
}

inline std::vector<std::int8_t> ramp(std::size_t n, int salt) {
  std::vector<std::int8_t> q(n);
  for (std::size_t i = 0; i < n; ++i)
    q[i] = static_cast<std::int8_t>(
        static_cast<int>((i * 37 + static_cast<std::size_t>(salt) * 11) % 61) - 30);
  return q;
}

// conv -> [relu] -> fix with deterministic weights; out fix point keeps shifts legal.
inline Value conv(GraphBuilder& b, const std::string& name, const Value& x, std::int64_t oc,
                  std::int64_t k = 3, bool relu = true) {
  const std::int64_t ic = x.shape.back();
  const auto n = static_cast<std::size_t>(oc * k * k * ic);
  const Value w =
      b.constant(name + "_w", {oc, k, k, ic}, ramp(n, static_cast<int>(name.size())), 7);
  const Value bias =
      b.constant(name + "_b", {oc}, ramp(static_cast<std::size_t>(oc), 3), x.fix_point + 2);
  Conv2dSpec spec;
  spec.kernel = {k, k};
  const std::int64_t p = k / 2;
  spec.pad = {p, p, p, p};
  spec.nonlinear = relu ? Nonlinear::Relu : Nonlinear::None;
  return b.conv2d(name, x, w, bias, spec, x.fix_point);
}

// input -> stem conv -> `branches` chains of `depth[i]` convs -> concat -> conv -> output.
inline Graph fork_join_model(const std::vector<int>& depth, bool with_stem = true) {
  GraphBuilder b("forkjoin");
  Value x = b.input("x", {1, 8, 8, 8}, 5);
  if (with_stem) x = conv(b, "stem", x, 8);
  std::vector<Value> ends;
  for (std::size_t i = 0; i < depth.size(); ++i) {
    Value y = x;
    for (int d = 0; d < depth[i]; ++d)
      y = conv(b, "branch" + std::to_string(i) + "_" + std::to_string(d), y, 8);
    ends.push_back(y);
  }
  const Value joined = b.concat("join", ends, 3, x.fix_point);
  conv(b, "head", joined, 8, 1, false);
  return b.finish();
}

// A chain of `n` convs: every fix between them is a legal pipeline cut.
inline Graph chain_model(int n, std::int64_t channels = 8) {
  GraphBuilder b("chain");
  Value x = b.input("x", {1, 8, 8, channels}, 5);
  for (int i = 0; i < n; ++i) x = conv(b, "c" + std::to_string(i), x, channels);
  return b.finish();
}

}  // namespace dpushard::testing
