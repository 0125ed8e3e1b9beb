// The vart backend's graph checks (core/src/exec/vart/dpu_binding.hpp) on the real compiled
// fixtures and on compiled-style graphs built in code, and what make_backend says about
// "vart" in a build without it. The VART calls themselves need a DPU: see docs/vart.md.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "exec/vart/dpu_binding.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using vart_detail::bind_dpu_subgraph;

const std::string kFixtures = DPUSHARD_FIXTURE_DIR "/";

std::string bind_error(const Graph& graph) {
  try {
    bind_dpu_subgraph(graph);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// A compiled-style graph: ops typed as vai_c_xir writes them, tensors carrying fix_point.
Op op(const std::string& name, const std::string& type, std::vector<std::string> inputs,
      std::vector<std::int64_t> shape, int fix_point) {
  Op o;
  o.name = name;
  o.type = type;
  if (!inputs.empty()) o.args.push_back({"input", std::move(inputs)});
  o.output.name = name + "_t";
  o.output.shape = std::move(shape);
  o.output.data_type = type == "fix2float" ? DataType::Float : DataType::XInt;
  o.output.bit_width = type == "fix2float" ? 32 : 8;
  if (type != "fix2float") o.output.attrs["fix_point"] = std::int32_t{fix_point};
  return o;
}

Subgraph child(const std::string& name, const std::string& device, std::vector<std::string> ops) {
  Subgraph s;
  s.name = name;
  s.ops = std::move(ops);
  s.attrs["device"] = device;
  return s;
}

// in (USER) -> a, b (DPU) -> out (CPU fix2float): what a fragment with an output fix compiles to.
Graph fragment() {
  Graph g("frag");
  g.add_op(op("in", "data-fix", {}, {1, 4, 4, 8}, 6));
  g.add_op(op("a", "conv2d-fix", {"in"}, {1, 4, 4, 8}, 4));
  g.add_op(op("b", "conv2d-fix", {"a"}, {1, 2, 2, 16}, 3));
  g.add_op(op("out", "fix2float", {"b"}, {1, 2, 2, 16}, 0));
  Subgraph root;
  root.name = "root";
  root.children = {child("s_in", "USER", {"in"}), child("s_dpu", "DPU", {"a", "b"}),
                   child("s_out", "CPU", {"out"})};
  g.root() = root;
  return g;
}

TEST(VartBinding, CompiledKv260Fixture) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph graph =
      read_xmodel(kFixtures + "mobilenetv2_yawn_compiled_dpuczdx8g_kv260_vai25.xmodel");
  const auto binding = bind_dpu_subgraph(graph);
  EXPECT_EQ(binding.subgraph,
            "subgraph_MobileNetV2Yawn__MobileNetV2Yawn_AdaptiveAvgPool2d_pool__10117_i0");
  ASSERT_EQ(binding.inputs.size(), 1u);
  EXPECT_EQ(binding.inputs[0].name, "MobileNetV2Yawn__input_0");
  EXPECT_EQ(binding.inputs[0].tensor, "MobileNetV2Yawn__input_0_fix");
  EXPECT_EQ(binding.inputs[0].shape, (std::vector<std::int64_t>{1, 224, 224, 3}));
  EXPECT_EQ(binding.inputs[0].fix_point, 5);
  ASSERT_EQ(binding.outputs.size(), 1u);
  const std::string fc = "MobileNetV2Yawn__MobileNetV2Yawn_Sequential_classifier__Linear_1__10124";
  EXPECT_EQ(binding.outputs[0].name, fc + "_fix_");   // the CPU fix2float: the graph's output
  EXPECT_EQ(binding.outputs[0].tensor, fc + "_fix");  // the DPU's download tensor
  EXPECT_EQ(binding.outputs[0].shape, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(binding.outputs[0].fix_point, 3);
}

TEST(VartBinding, CompiledVersalFixture) {
  DPUSHARD_REQUIRE_FIXTURES();
  const auto binding = bind_dpu_subgraph(
      read_xmodel(kFixtures + "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel"));
  ASSERT_EQ(binding.inputs.size(), 1u);
  EXPECT_EQ(binding.inputs[0].shape, (std::vector<std::int64_t>{1, 32, 32, 3}));
  ASSERT_EQ(binding.outputs.size(), 1u);
  EXPECT_EQ(binding.outputs[0].shape, (std::vector<std::int64_t>{1, 10}));
}

TEST(VartBinding, InputSpecsOfCompiledGraph) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph graph =
      read_xmodel(kFixtures + "mobilenetv2_yawn_compiled_dpuczdx8g_kv260_vai25.xmodel");
  const auto specs = input_specs(graph);
  ASSERT_EQ(specs.size(), 1u);
  const auto binding = bind_dpu_subgraph(graph);
  EXPECT_EQ(specs[0].name, binding.inputs[0].name);
  EXPECT_EQ(specs[0].shape, binding.inputs[0].shape);
  EXPECT_EQ(specs[0].fix_point, binding.inputs[0].fix_point);
}

TEST(VartBinding, BuiltFragment) {
  const auto binding = bind_dpu_subgraph(fragment());
  EXPECT_EQ(binding.subgraph, "s_dpu");
  ASSERT_EQ(binding.inputs.size(), 1u);
  EXPECT_EQ(binding.inputs[0].tensor, "in_t");
  EXPECT_EQ(binding.inputs[0].fix_point, 6);
  ASSERT_EQ(binding.outputs.size(), 1u);
  EXPECT_EQ(binding.outputs[0].name, "out");
  EXPECT_EQ(binding.outputs[0].tensor, "b_t");
  EXPECT_EQ(binding.outputs[0].shape, (std::vector<std::int64_t>{1, 2, 2, 16}));
  EXPECT_EQ(binding.outputs[0].fix_point, 3);
}

TEST(VartBinding, UncompiledGraph) {
  DPUSHARD_REQUIRE_FIXTURES();
  EXPECT_THAT(bind_error(read_xmodel(kFixtures + "resnet20_cifar10_int_quantized.xmodel")),
              AllOf(HasSubstr("vart: graph '"), HasSubstr("not a compiled xmodel"),
                    HasSubstr("vai_c_xir")));
}

TEST(VartBinding, TwoDpuSubgraphs) {
  Graph g = fragment();
  g.root()->children = {child("s_in", "USER", {"in"}), child("s_dpu0", "DPU", {"a"}),
                        child("s_dpu1", "DPU", {"b"}), child("s_out", "CPU", {"out"})};
  EXPECT_EQ(bind_error(g),
            "vart: graph 'frag': needs graph_runner: 2 DPU subgraphs (s_dpu0, s_dpu1)");
}

TEST(VartBinding, NoDpuSubgraph) {
  Graph g = fragment();
  g.root()->children = {child("s_in", "USER", {"in"}), child("s_cpu", "CPU", {"a", "b", "out"})};
  EXPECT_EQ(bind_error(g), "vart: graph 'frag': no DPU subgraph (subgraphs: USER s_in, CPU s_cpu)");
}

TEST(VartBinding, CpuOpFeedsTheDpu) {
  Graph g = fragment();
  g.root()->children = {child("s_in", "USER", {"in"}), child("s_cpu", "CPU", {"a"}),
                        child("s_dpu", "DPU", {"b"}), child("s_out", "CPU", {"out"})};
  EXPECT_THAT(bind_error(g), AllOf(HasSubstr("DPU subgraph 's_dpu' takes 'a' (conv2d-fix)"),
                                   HasSubstr("CPU subgraph 's_cpu'"), HasSubstr("graph_runner")));
}

TEST(VartBinding, OutputComputedOnTheCpu) {
  Graph g("frag");
  g.add_op(op("in", "data-fix", {}, {1, 4}, 6));
  g.add_op(op("a", "conv2d-fix", {"in"}, {1, 4}, 4));
  g.add_op(op("sm", "softmax", {"a"}, {1, 4}, 0));
  Subgraph root;
  root.name = "root";
  root.children = {child("s_in", "USER", {"in"}), child("s_dpu", "DPU", {"a"}),
                   child("s_cpu", "CPU", {"sm"})};
  g.root() = root;
  EXPECT_THAT(bind_error(g), AllOf(HasSubstr("output 'sm' is computed by 'softmax'"),
                                   HasSubstr("CPU subgraph 's_cpu'"), HasSubstr("output fix op")));
}

TEST(VartBinding, InputAlsoFeedsTheCpu) {
  Graph g = fragment();
  g.add_op(op("side", "fix2float", {"in"}, {1, 4, 4, 8}, 0));
  g.root()->children.push_back(child("s_side", "CPU", {"side"}));
  EXPECT_THAT(bind_error(g), HasSubstr("input 'in' also feeds 'side' (fix2float) in CPU subgraph"));
}

TEST(VartBackend, NotBuiltHere) {
  try {
    make_backend("vart");
    FAIL() << "make_backend(\"vart\") succeeded in a build without the vart backend";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "backend 'vart' is not built here: configure with -DDPUSHARD_WITH_VART=ON where "
                 "Vitis AI's runtime is installed");
  }
}

// Asked without a backend (BackendDescriptor::unsupported, what the conformance test skips
// on): the fragment load() binds, and not one that needs graph_runner.
TEST(VartBackend, SaysWhichGraphsItTakesWithoutLoading) {
  const auto vart = backend_descriptor("vart");
  ASSERT_TRUE(vart->unsupported);
  EXPECT_EQ(vart->unsupported(fragment()), "");
  Graph g = fragment();
  g.root()->children = {child("s_in", "USER", {"in"}), child("s_dpu0", "DPU", {"a"}),
                        child("s_dpu1", "DPU", {"b"}), child("s_out", "CPU", {"out"})};
  EXPECT_EQ(vart->unsupported(g),
            "vart: graph 'frag': needs graph_runner: 2 DPU subgraphs (s_dpu0, s_dpu1)");
}

// Its DPU process's hidden subcommand is the registry's (BackendDescriptor::command): known
// here, and refused in one line where the backend is not built.
TEST(VartBackend, DpuChildCommandNotBuiltHere) {
  std::string program = "dpushard", command = "dpu-child", other = "exec";
  char* child_argv[] = {program.data(), command.data(), nullptr};
  char* other_argv[] = {program.data(), other.data(), nullptr};
  EXPECT_EQ(backend_command(2, other_argv), nullptr);
  EXPECT_EQ(backend_command(1, child_argv), nullptr);
  const auto backend = backend_command(2, child_argv);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name, "vart");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(run_backend_command(*backend, 2, child_argv), 2);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "dpushard: error: dpu-child: backend 'vart' is not built here: configure with "
            "-DDPUSHARD_WITH_VART=ON where Vitis AI's runtime is installed\n");
}

}  // namespace
}  // namespace dpushard
