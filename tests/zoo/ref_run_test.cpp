// 1M-parameter models of both families through the ref backend: every activation (each
// fix op's int8 output) is alive, neither saturated nor collapsed to zero, so the fix
// points chosen from the moment model (docs/zoo.md) hold on real arithmetic.

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/zoo/zoo.hpp"

namespace dpushard {
namespace {

struct Stats {
  std::string name;
  double rms = 0.0;
  double saturated = 0.0;  // fraction at -128 or 127
  double zero = 0.0;       // fraction at 0
};

Stats stats_of(const std::string& name, const QTensor& t) {
  Stats s{name};
  double m2 = 0.0;
  for (const std::int8_t v : t.data) {
    m2 += static_cast<double>(v) * v;
    if (v == 127 || v == -128) s.saturated += 1.0;
    if (v == 0) s.zero += 1.0;
  }
  const auto n = static_cast<double>(t.data.size());
  s.rms = std::sqrt(m2 / n);
  s.saturated /= n;
  s.zero /= n;
  return s;
}

// Makes every activation fix op an output by hanging an identity reshape on it, runs one
// random frame on `ref` and returns the statistics of each activation.
std::vector<Stats> activation_stats(Graph g, std::uint64_t seed) {
  std::vector<std::string> fixes;
  for (const Op& op : g.ops()) {
    if (op.type != "fix") continue;
    if (g.op(op.producers("input").front()).type == "const") continue;  // weights
    fixes.push_back(op.name);
  }
  for (const std::string& fix : fixes) {
    Op probe;
    probe.name = fix + "/probe";
    probe.type = "reshape";
    probe.args = {{"input", {fix}}};
    const std::vector<std::int64_t>& shape = g.op(fix).output.shape;
    probe.attrs["shape"] = std::vector<std::int32_t>(shape.begin(), shape.end());
    probe.output.name = probe.name;
    probe.output.shape = shape;
    g.add_op(std::move(probe));
  }
  infer_shapes(g);

  auto backend = make_backend("ref");
  backend->load(g);
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(g))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, seed));
  const std::vector<QTensor> outputs = backend->run(inputs);
  const auto output_ops = g.outputs();
  EXPECT_EQ(outputs.size(), output_ops.size());
  std::vector<Stats> all;
  for (std::size_t i = 0; i < outputs.size() && i < output_ops.size(); ++i) {
    std::string name = output_ops[i]->name;
    name.resize(name.size() - std::string("/probe").size());
    all.push_back(stats_of(name, outputs[i]));
  }
  return all;
}

void expect_alive(const std::vector<Stats>& all, std::size_t min_count) {
  EXPECT_GE(all.size(), min_count);
  for (const Stats& s : all) {
    if (s.name == "input_fix") continue;  // random uniform int8: saturates by design
    // Modelled rms is 12 to 24 levels; allow for the model's approximations.
    EXPECT_GT(s.rms, 6.0) << s.name;
    EXPECT_LT(s.rms, 48.0) << s.name;
    EXPECT_LT(s.saturated, 0.005) << s.name;
    EXPECT_LT(s.zero, 0.7) << s.name;  // ReLU outputs are about half zero
  }
}

ZooSpec one_million(int experts) {
  ZooSpec spec;
  spec.params = 1'000'000;
  spec.experts = experts;
  spec.seed = 5;
  return spec;
}

TEST(ZooOnRef, CnnActivationsAreNeitherSaturatedNorZero) {
  const auto stats = activation_stats(make_cnn(one_million(2)), 11);
  expect_alive(stats, 20);
}

TEST(ZooOnRef, ConvVitActivationsAreNeitherSaturatedNorZero) {
  ZooSpec spec = one_million(2);
  spec.input = {112, 112, 3};  // 49 tokens keep the test fast; 224 gives 196
  spec.attention = ConvVitAttention::Softmax;
  const auto stats = activation_stats(make_convvit(spec), 11);
  expect_alive(stats, 50);
}

// The gated ConvViT at 224x224: 196 tokens, the mean over them in two pooling stages.
TEST(ZooOnRef, GatedConvVitActivationsAreNeitherSaturatedNorZero) {
  ZooSpec spec = one_million(2);
  spec.attention = ConvVitAttention::Gated;
  const auto stats = activation_stats(make_convvit(spec), 11);
  expect_alive(stats, 50);
}

TEST(ZooOnRef, ClassifierOutputsDependOnTheInput) {
  ZooSpec spec = one_million(1);
  spec.input = {64, 64, 3};
  const Graph g = make_cnn(spec);
  auto backend = make_backend("ref");
  backend->load(g);
  const QTensor in = input_specs(g).front();
  const auto a = backend->run({random_qtensor(in.name, in.shape, in.fix_point, 1)});
  const auto b = backend->run({random_qtensor(in.name, in.shape, in.fix_point, 2)});
  ASSERT_EQ(a.size(), 1U);
  EXPECT_NE(a[0].data, b[0].data);
}

}  // namespace
}  // namespace dpushard
