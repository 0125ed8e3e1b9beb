// Every backend that computes numerics (ref, cpu, sim with its "numerics" option) against `ref` on
// the same cases: single ops over full-range random int8 data, small zoo models, the real
// ResNet-20 fixture and a torchvision ResNet-18 imported from ONNX (where ONNX import is
// built). Outputs must be byte-identical. As ggml's test-backend-ops, it iterates over the
// registry: a backend this build registers is compared without touching this file, and a case a
// backend declines (BackendDescriptor::unsupported) is skipped. Where tests/vart links vart on
// the VART double, vart joins them with each case's compiled equivalent (conformance.hpp). A
// second test drives the cpu backend's sums past float precision.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "conformance.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/quant/quantize.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "ref_test_util.hpp"
#include "xmodel/fixtures.hpp"
#ifdef DPUSHARD_HAVE_ONNX_IMPORT
#include "dpushard/onnx/onnx_import.hpp"
#endif

namespace dpushard {

conformance::Compiler& conformance::compiler() {
  static Compiler compiler;
  return compiler;
}

namespace {

using Case = std::function<Graph()>;

// Seeded random int8 values for a constant (weights, bias).
std::vector<std::int8_t> random_values(const std::string& name,
                                       const std::vector<std::int64_t>& shape) {
  return random_qtensor(name, shape, 0, 7).data;
}

Value constant(GraphBuilder& b, const std::string& name, std::vector<std::int64_t> shape, int fp) {
  const auto values = random_values(name, shape);
  return b.constant(name, std::move(shape), values, fp);
}

// x [1, h, w, c] at fp 4, weights OHWI at fp 7, bias at fp 6; output fp 3 (shift 8).
Case conv_case(std::int64_t h, std::int64_t w, std::int64_t c, std::int64_t oc, Conv2dSpec spec,
               bool bias, bool depthwise = false) {
  return [=] {
    GraphBuilder b("conv");
    const Value x = b.input("x", {1, h, w, c}, 4);
    std::optional<Value> bv;
    if (bias) bv = constant(b, "b", {depthwise ? c : oc}, 6);
    if (depthwise) {
      b.depthwise_conv2d("dw", x, constant(b, "w", {1, spec.kernel[0], spec.kernel[1], c}, 7), bv,
                         spec, 3);
    } else {
      b.conv2d("conv", x, constant(b, "w", {oc, spec.kernel[0], spec.kernel[1], c / spec.group}, 7),
               bv, spec, 3);
    }
    return b.finish();
  };
}

Conv2dSpec spec(std::array<std::int64_t, 2> kernel, std::array<std::int64_t, 2> stride,
                std::array<std::int64_t, 2> dilation, std::array<std::int64_t, 4> pad,
                std::int64_t group, Nonlinear nonlinear) {
  Conv2dSpec s;
  s.kernel = kernel;
  s.stride = stride;
  s.dilation = dilation;
  s.pad = pad;
  s.group = group;
  s.nonlinear = nonlinear;
  return s;
}

// a [batch.., m, k] at fp 5 x b at fp 6 (+ bias at fp 8), output fp 4.
Case matmul_case(std::int64_t m, std::int64_t k, std::int64_t n, bool bias, bool transpose_b,
                 Nonlinear nonlinear) {
  return [=] {
    GraphBuilder b("mm");
    const Value a = b.input("a", {m, k}, 5);
    std::optional<Value> bv;
    if (bias) bv = constant(b, "bias", {n}, 8);
    const Value w = transpose_b ? constant(b, "w", {n, k}, 6) : constant(b, "w", {k, n}, 6);
    b.matmul("mm", a, w, bv, transpose_b, 4, nonlinear);
    return b.finish();
  };
}

// Attention-style product of two activations, [2, 5, 16] x [2, 7, 16]^T.
Graph activation_matmul() {
  GraphBuilder b("attn");
  const Value q = b.input("q", {2, 5, 16}, 4);
  const Value k = b.input("k", {2, 7, 16}, 5);
  b.matmul("qk", q, k, std::nullopt, true, 2);
  return b.finish();
}

// inner-product over a flattened [1, 4, 4, 8] input, weights [10, 128], bias.
Graph inner_product() {
  GraphBuilder b("ip");
  const Value x = b.input("x", {1, 4, 4, 8}, 4);
  const Value w = constant(b, "w", {10, 128}, 7);
  const Value bias = constant(b, "bias", {10}, 5);
  Graph g = b.finish();
  testing::add_op(g, "fc", "inner-product",
                  {{"input", {x.op}}, {"weights", {w.op}}, {"bias", {bias.op}}},
                  {{"axis", std::int32_t{1}}}, {1, 10});
  testing::add_fix(g, "fc", 2);
  return g;
}

// producer -> `activation` -> fix, fused: a conv (1x1) or a matmul with a float (or
// leaky 0.2) nonlinear that the DPU does not have, computed from the accumulator.
Case fused_float_case(bool conv, std::string activation) {
  return [=] {
    GraphBuilder b("fused");
    const Value x = conv ? b.input("x", {1, 6, 6, 16}, 5) : b.input("x", {6, 16}, 5);
    const Value w = conv ? constant(b, "w", {8, 1, 1, 16}, 7) : constant(b, "w", {16, 8}, 7);
    const Value bias = constant(b, "bias", {8}, 7);
    // A builder-made twin supplies the producer's attributes; it stays as a second output.
    if (conv)
      b.conv2d("twin", x, w, bias, spec({1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, Nonlinear::None),
               4);
    else
      b.matmul("twin", x, w, bias, false, 4);
    Graph g = b.finish();
    Op producer = g.op("twin");
    producer.name = "p";
    producer.output.name = "p";
    g.add_op(std::move(producer));
    AttrMap attrs;
    if (activation == "leaky-relu") attrs["alpha"] = 0.2f;
    testing::add_op(g, "act", activation, {{"input", {"p"}}}, attrs, g.op("p").output.shape);
    testing::add_fix(g, "act", 6);
    return g;
  };
}

// Elementwise and pooling chains over [1, 9, 9, 24] inputs at differing fix points.
Graph eltwise_graph(const std::string& kind) {
  GraphBuilder b(kind);
  const Value x = b.input("x", {1, 9, 9, 24}, 4);
  if (kind == "add_relu") {
    b.add("add", {x, b.input("y", {1, 9, 9, 24}, 6)}, 3, Nonlinear::Relu);
  } else if (kind == "add3_leaky") {
    b.add("add", {x, b.input("y", {1, 9, 9, 24}, 2), b.input("z", {1, 9, 9, 24}, 5)}, 4,
          Nonlinear::LeakyRelu);
  } else if (kind == "add_leaky") {
    b.add("add", {x, b.input("y", {1, 9, 9, 24}, 3)}, 2, Nonlinear::LeakyRelu);
  } else if (kind == "add_same_fp") {
    b.add("add", {x, b.input("y", {1, 9, 9, 24}, 4)}, 4);
  } else if (kind == "mul") {
    b.mul("mul", x, b.input("y", {1, 9, 9, 24}, 5), 6);
  } else if (kind == "relu6") {
    b.relu6("r6", x, 3);
  } else if (kind == "leaky") {
    b.leaky_relu("lk", x, 0.1, 5);
  } else if (kind == "maxpool3x3_s2_pad1") {
    Pool2dSpec p;
    p.kernel = {3, 3};
    p.stride = {2, 2};
    p.pad = {1, 1, 1, 1};
    b.maxpool2d("mp", x, p);
  } else if (kind == "maxpool_global") {
    Pool2dSpec p;
    p.global = true;
    b.maxpool2d("mp", x, p);
  } else if (kind == "avgpool3x3_s1") {
    Pool2dSpec p;
    p.kernel = {3, 3};
    p.stride = {1, 1};
    b.avgpool2d("ap", x, p, 5);
  } else if (kind == "avgpool_global") {
    Pool2dSpec p;
    p.global = true;
    b.avgpool2d("ap", x, p, 6);
  }
  return b.finish();
}

ZooSpec small_zoo(std::int64_t params) {
  ZooSpec s;
  s.params = params;
  s.experts = 2;
  s.input = {32, 32, 3};
  s.classes = 10;
  return s;
}

#ifdef DPUSHARD_HAVE_ONNX_IMPORT
// torchvision's ResNet-18 (random weights, 32x32) exported by tests/onnx/make_models.py
// with Debian's Python, imported and quantized with random calibration; made once.
Graph imported_resnet18() {
  static const Graph graph = [] {
    const std::filesystem::path dir = std::filesystem::path(DPUSHARD_BACKENDS_WORK) / "resnet18";
    std::filesystem::create_directories(dir);
    // The export is deterministic (seed 0): a model left by an earlier run is reused. ctest
    // runs each case in its own process, several at once: each exports into a folder of
    // its own and renames the file into place, so no case reads a half-written model.
    if (!std::filesystem::exists(dir / "model.onnx")) {
      const auto own = dir / ("export-" + std::to_string(::getpid()));
      std::filesystem::create_directories(own);
      const std::string command = "/usr/bin/python3 '" + std::string(DPUSHARD_SOURCE_DIR) +
                                  "/tests/onnx/make_models.py' torchvision resnet18 '" +
                                  own.string() + "' --size 32 >'" + (own / "python.log").string() +
                                  "' 2>&1";
      if (std::system(command.c_str()) != 0)
        throw Error("make_models.py failed, see " + (own / "python.log").string());
      std::filesystem::rename(own / "model.onnx", dir / "model.onnx");
      std::filesystem::remove_all(own);
    }
    const Graph float_graph = import_onnx(dir / "model.onnx").graph;
    return quantize(float_graph, random_calibration(float_graph, 2, 3));
  }();
  return graph;
}
#endif

const std::map<std::string, Case>& cases() {
  using N = Nonlinear;
  static const std::map<std::string, Case> all = {
#ifdef DPUSHARD_HAVE_ONNX_IMPORT
      {"imported_resnet18_32", imported_resnet18},
#endif
      {"conv3x3_pad1_relu",
       conv_case(9, 9, 16, 24, spec({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, N::Relu), true)},
      {"conv3x3_stride2_asympad_relu6",
       conv_case(10, 11, 8, 16, spec({3, 3}, {2, 2}, {1, 1}, {0, 1, 1, 0}, 1, N::Relu6), true)},
      {"conv5x3_dilation2_leaky",
       conv_case(12, 12, 8, 8, spec({5, 3}, {1, 2}, {2, 2}, {2, 2, 4, 4}, 1, N::LeakyRelu), true)},
      {"conv1x1_nobias",
       conv_case(7, 5, 32, 40, spec({1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, N::None), false)},
      {"conv_first_layer_rgb",
       conv_case(16, 16, 3, 16, spec({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, N::Relu), true)},
      {"conv_groups4",
       conv_case(8, 8, 16, 32, spec({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 4, N::Relu), true)},
      {"conv_deep_k2304",
       conv_case(4, 4, 256, 8, spec({3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, 1, N::None), true)},
      {"depthwise3x3_stride2",
       conv_case(9, 9, 24, 24, spec({3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 1, N::Relu6), true,
                 true)},
      {"depthwise5x5_nobias",
       conv_case(8, 8, 16, 16, spec({5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, 1, N::None), false,
                 true)},
      {"matmul_bias", matmul_case(7, 40, 12, true, false, N::None)},
      {"matmul_nobias_relu", matmul_case(5, 33, 9, false, false, N::Relu)},
      {"matmul_transpose_b_bias_leaky", matmul_case(6, 64, 10, true, true, N::LeakyRelu)},
      {"matmul_transpose_b_relu6", matmul_case(3, 20, 4, false, true, N::Relu6)},
      {"matmul_two_activations", activation_matmul},
      {"inner_product", inner_product},
      {"conv_sigmoid", fused_float_case(true, "sigmoid")},
      {"conv_hard_sigmoid", fused_float_case(true, "hard-sigmoid")},
      {"conv_hard_swish", fused_float_case(true, "hard-swish")},
      {"conv_gelu", fused_float_case(true, "gelu")},
      {"conv_leaky_0_2", fused_float_case(true, "leaky-relu")},
      {"matmul_gelu", fused_float_case(false, "gelu")},
      {"matmul_sigmoid", fused_float_case(false, "sigmoid")},
      {"add_relu", [] { return eltwise_graph("add_relu"); }},
      {"add3_leaky", [] { return eltwise_graph("add3_leaky"); }},
      {"add_leaky", [] { return eltwise_graph("add_leaky"); }},
      {"add_same_fp", [] { return eltwise_graph("add_same_fp"); }},
      {"mul", [] { return eltwise_graph("mul"); }},
      {"relu6", [] { return eltwise_graph("relu6"); }},
      {"leaky", [] { return eltwise_graph("leaky"); }},
      {"maxpool3x3_s2_pad1", [] { return eltwise_graph("maxpool3x3_s2_pad1"); }},
      {"maxpool_global", [] { return eltwise_graph("maxpool_global"); }},
      {"avgpool3x3_s1", [] { return eltwise_graph("avgpool3x3_s1"); }},
      {"avgpool_global", [] { return eltwise_graph("avgpool_global"); }},
      {"zoo_cnn_1M", [] { return make_cnn(small_zoo(1'000'000)); }},
      {"zoo_convvit_1M", [] { return make_convvit(small_zoo(1'000'000)); }},
      {"zoo_convvit_softmax_1M",
       [] {
         ZooSpec spec = small_zoo(1'000'000);
         spec.attention = ConvVitAttention::Softmax;
         return make_convvit(spec);
       }},
      {"resnet20_fixture",
       [] {
         return read_xmodel(std::filesystem::path(DPUSHARD_FIXTURE_DIR) /
                            "resnet20_cifar10_int_quantized.xmodel");
       }},
  };
  return all;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& [name, unused] : cases()) names.push_back(name);
  return names;
}

std::unique_ptr<Backend> backend_named(const std::string& name) {
  register_builtin_backends();
  BackendOptions options;
  options.threads = 2;
  // A backend that computes outputs only on request (sim) lists the option that asks.
  for (const BackendOptionSpec& option : backend_descriptor(name)->options)
    if (option.key == "numerics") options.settings["numerics"] = "true";
  return make_backend(name, options);
}

// Every backend built here but ref itself that computes outputs (or does when asked), as
// llama.cpp's test-backend-ops does: a backend added to the build is compared without
// touching this file. vart joins where tests/vart links it on the VART double.
std::vector<std::string> compared_backends() {
  register_builtin_backends();
  std::vector<std::string> names;
  for (const std::string& name : backend_names()) {
    const auto d = backend_descriptor(name);
    const bool asks_numerics = std::any_of(d->options.begin(), d->options.end(),
                                           [](const auto& o) { return o.key == "numerics"; });
    if (name != "ref" && (d->traits.computes_outputs || asks_numerics)) names.push_back(name);
  }
  return names;
}

using Param = std::tuple<std::string, std::string>;  // backend, case

class BackendMatchesRef : public ::testing::TestWithParam<Param> {};

TEST_P(BackendMatchesRef, ByteIdenticalOutputs) {
  const auto& [backend_name, case_name] = GetParam();
  if (case_name == "resnet20_fixture") DPUSHARD_REQUIRE_FIXTURES();
  const Graph graph = cases().at(case_name)();
  // A backend that runs compiled files only gets the compiled form, where this program has a
  // compiler for it; its inputs are then named after the data-fix ops.
  const auto descriptor = backend_descriptor(backend_name);
  conformance::CompiledForm form{graph, ""};
  if (descriptor->traits.compiled == CompiledModels::Required && conformance::compiler())
    form = conformance::compiler()(graph);
  const Graph& loaded = form.graph;
  const std::string& output_suffix = form.output_suffix;
  if (descriptor->unsupported) {
    const std::string why = descriptor->unsupported(loaded);
    if (!why.empty()) GTEST_SKIP() << backend_name << " does not take this case: " << why;
  }
  auto ref = backend_named("ref");
  auto backend = backend_named(backend_name);
  ref->load(graph);
  backend->load(loaded);
  const auto backend_specs = input_specs(loaded);
  // Two frames: the second checks that nothing leaks from one frame into the next.
  for (std::uint64_t seed : {1u, 2u}) {
    std::vector<QTensor> inputs;
    for (const QTensor& spec : input_specs(graph))
      inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, seed));
    const auto expected = ref->run(inputs);
    for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].name = backend_specs[i].name;
    const auto actual = backend->run(inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(actual[i].name, expected[i].name + output_suffix);
      EXPECT_EQ(actual[i].shape, expected[i].shape);
      EXPECT_EQ(actual[i].fix_point, expected[i].fix_point);
      EXPECT_TRUE(actual[i].computed) << expected[i].name;
      ASSERT_EQ(actual[i].data.size(), expected[i].data.size());
      std::size_t differing = 0;
      for (std::size_t j = 0; j < expected[i].data.size(); ++j)
        if (actual[i].data[j] != expected[i].data[j]) ++differing;
      EXPECT_EQ(differing, 0u) << "output '" << expected[i].name << "', frame seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCases, BackendMatchesRef,
                         ::testing::Combine(::testing::ValuesIn(compared_backends()),
                                            ::testing::ValuesIn(case_names())),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           return std::get<0>(param_info.param) + "_" +
                                  std::get<1>(param_info.param);
                         });

// Sums past 2^24, where oneDNN's s32 result passes through f32: a 1x1 conv (or matmul) over
// 2049 channels, 2048 of them -128 x -128 (2^25 in all) and one x * -1, with a bias of
// -2^25 leaving exactly -x, so every rounded sum shows in the int8 output.
Graph past_float_precision(bool conv) {
  constexpr std::int64_t k = 2049, channels = 8;
  GraphBuilder b("exact");
  const Value x = conv ? b.input("x", {1, 4, 4, k}, 0) : b.input("x", {16, k}, 0);
  std::vector<std::int8_t> w(k * channels, -128);
  for (std::int64_t c = 0; c < channels; ++c)
    w[static_cast<std::size_t>(conv ? c * k + k - 1 : (k - 1) * channels + c)] = -1;
  const Value weights = b.constant(
      "w",
      conv ? std::vector<std::int64_t>{channels, 1, 1, k} : std::vector<std::int64_t>{k, channels},
      w, 0);
  const Value bias = b.constant("b", {channels}, std::vector<std::int8_t>(channels, -128), -18);
  if (conv)
    b.conv2d("conv", x, weights, bias,
             spec({1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, 1, Nonlinear::None), -1);
  else
    b.matmul("mm", x, weights, bias, false, -1);
  return b.finish();
}

TEST(CpuBackend, SumsPastFloatPrecisionStayExact) {
  register_builtin_backends();
  const auto cpu_backend = find_backend("cpu");
  if (!cpu_backend || !cpu_backend->make) GTEST_SKIP() << "cpu is not built here (no oneDNN)";
  for (bool conv : {true, false}) {
    const Graph graph = past_float_precision(conv);
    const QTensor input_spec = input_specs(graph).at(0);
    QTensor input = random_qtensor(input_spec.name, input_spec.shape, 0, 5);
    const QTensor random = input;
    for (std::size_t i = 0; i < input.data.size(); ++i)
      input.data[i] = i % 2049 == 2048 ? random.data[i] : std::int8_t{-128};
    auto ref = backend_named("ref");
    auto cpu = backend_named("cpu");
    ref->load(graph);
    cpu->load(graph);
    const auto expected = ref->run({input}).at(0);
    const auto actual = cpu->run({input}).at(0);
    // The sums span [2^25 - 127, 2^25 + 128]: outputs cover a wide range, not a constant.
    const auto [lo, hi] = std::minmax_element(expected.data.begin(), expected.data.end());
    EXPECT_LT(*lo, -30);
    EXPECT_GT(*hi, 30);
    EXPECT_EQ(actual.data, expected.data) << (conv ? "conv" : "matmul");
  }
}

}  // namespace
}  // namespace dpushard
