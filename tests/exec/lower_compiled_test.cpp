// lower_compiled (core/src/xmodel/lower_compiled.cpp) on the real compiled fixtures: the
// compiled ResNet-20 lowered and run by `ref` gives, byte for byte, what `ref` gives on the
// `_int` file it was compiled from. Only the weights come from the `_int` file (the compiled
// file's const-fix ops are empty); the ops, their attributes and every fix point come from
// the compiled file, so the comparison checks the lowering, not itself.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/xmodel/lower_compiled.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "support/float_cpu_tail.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::fixture;
using testing::kMobileNetKv260;
using testing::kResNetInt;
using testing::kResNetVck190;

std::vector<QTensor> run_ref(const Graph& graph, const std::vector<QTensor>& inputs) {
  auto backend = make_backend("ref");
  backend->load(graph);
  return backend->run(inputs);
}

std::vector<QTensor> random_inputs(const Graph& graph, std::uint64_t seed) {
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(graph))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, seed));
  return inputs;
}

// The compiled file with every const-fix `data` attribute filled from the `_int` file, as
// XIR defines the op (int8 values): a compiled file that carries its own weights.
Graph with_weights(Graph compiled, const Graph& int_graph) {
  const Graph lowered = lower_compiled(compiled, &int_graph);
  for (Op& op : compiled.mutable_ops()) {
    if (op.type != "const-fix") continue;
    const std::vector<float> values = const_values(lowered.op(op.name + "/const"));
    const int fp = static_cast<int>(int_attr(op.output.attrs, "fix_point", 0));
    Bytes bytes;
    // Through int8: a negative float converted straight to char is undefined where char is
    // unsigned (aarch64): there the negative weights came out wrong.
    for (float v : values)
      bytes.data.push_back(static_cast<char>(static_cast<std::int8_t>(std::ldexp(v, fp))));
    op.attrs["data"] = bytes;
  }
  return compiled;
}

std::string error_of(const Graph& compiled, const Graph* int_graph = nullptr) {
  try {
    lower_compiled(compiled, int_graph);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

class LowerCompiled : public ::testing::Test {
 protected:
  void SetUp() override {
    DPUSHARD_REQUIRE_FIXTURES();
    int_graph_ = read_xmodel(fixture(kResNetInt));
    compiled_ = read_xmodel(fixture(kResNetVck190));
  }
  Op& op_of_type(const std::string& type) {
    for (Op& op : compiled_.mutable_ops())
      if (op.type == type) return op;
    throw Error("no " + type);
  }
  Graph int_graph_, compiled_;
};

TEST_F(LowerCompiled, ResNet20EqualsRefOnTheIntFileByteForByte) {
  const Graph lowered = lower_compiled(compiled_, &int_graph_);
  EXPECT_FALSE(is_compiled(lowered));
  // Same inputs and outputs, names included, as the compiled file (what `vart` reports).
  ASSERT_EQ(input_specs(lowered).size(), 1U);
  EXPECT_EQ(input_specs(lowered)[0].name, input_specs(compiled_)[0].name);
  EXPECT_EQ(input_specs(lowered)[0].fix_point, input_specs(int_graph_)[0].fix_point);
  ASSERT_EQ(lowered.outputs().size(), 1U);
  EXPECT_EQ(lowered.outputs()[0]->name, compiled_.outputs()[0]->name);
  for (std::uint64_t seed : {1U, 2U, 3U, 4U, 5U}) {
    const std::vector<QTensor> inputs = random_inputs(int_graph_, seed);
    const QTensor want = run_ref(int_graph_, inputs).at(0);
    const QTensor got = run_ref(lowered, inputs).at(0);
    EXPECT_EQ(got.shape, want.shape) << "seed " << seed;
    EXPECT_EQ(got.fix_point, want.fix_point) << "seed " << seed;
    EXPECT_EQ(got.data, want.data) << "seed " << seed;
  }
}

// The comparison above is sensitive to the compiled file: one attribute changed (the last
// residual add without its relu) changes the output.
TEST_F(LowerCompiled, ACompiledAttributeChangesTheResult) {
  Op* last_add = nullptr;
  for (Op& op : compiled_.mutable_ops())
    if (op.type == "eltwise-fix") last_add = &op;
  ASSERT_NE(last_add, nullptr);
  last_add->attrs["nonlinear"] = std::string("NONE");
  const std::vector<QTensor> inputs = random_inputs(int_graph_, 1);
  EXPECT_NE(run_ref(lower_compiled(compiled_, &int_graph_), inputs).at(0).data,
            run_ref(int_graph_, inputs).at(0).data);
}

TEST_F(LowerCompiled, WeightsInTheConstFixDataNeedNoIntFile) {
  const Graph filled = with_weights(compiled_, int_graph_);
  const std::vector<QTensor> inputs = random_inputs(int_graph_, 7);
  EXPECT_EQ(run_ref(lower_compiled(filled), inputs).at(0).data,
            run_ref(int_graph_, inputs).at(0).data);
}

TEST_F(LowerCompiled, EmptyWeightsWithoutTheIntFileAreOneLineNamingTheConst) {
  const std::string error = error_of(compiled_);
  EXPECT_NE(error.find("op 'CifarResNet__fc_weight(reshaped)' (const-fix): holds no weights"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  // The KV260 MobileNetV2 stores its weights the same way and has no `_int` file here.
  const std::string kv260 = error_of(read_xmodel(fixture(kMobileNetKv260)));
  EXPECT_NE(kv260.find("(const-fix): holds no weights"), std::string::npos) << kv260;
}

TEST_F(LowerCompiled, IntFileWithOtherFixPointsIsRefused) {
  for (Op& op : int_graph_.mutable_ops())
    if (op.type == "fix" && op.producers("input").front() == "CifarResNet__conv1_bias")
      op.attrs["fix_point"] = std::int32_t{3};
  EXPECT_NE(error_of(compiled_, &int_graph_)
                .find("op 'CifarResNet__conv1_bias' (const-fix): fix_point 7 differs"),
            std::string::npos)
      << error_of(compiled_, &int_graph_);
}

TEST_F(LowerCompiled, UnknownOpsAttributesAndValuesAreOneLineErrors) {
  op_of_type("conv2d-fix").attrs["nonlinear"] = std::string("HSWISH");
  EXPECT_NE(error_of(compiled_, &int_graph_).find("(conv2d-fix): nonlinear 'HSWISH' has no"),
            std::string::npos);
  compiled_ = read_xmodel(fixture(kResNetVck190));
  op_of_type("eltwise-fix").attrs["type"] = std::string("MUL");
  EXPECT_NE(error_of(compiled_, &int_graph_).find("(eltwise-fix): eltwise type 'MUL'"),
            std::string::npos);
  compiled_ = read_xmodel(fixture(kResNetVck190));
  op_of_type("pool-fix").attrs["shift_cut"] = std::int32_t{3};
  EXPECT_NE(error_of(compiled_, &int_graph_).find("(pool-fix): attribute 'shift_cut' is not"),
            std::string::npos);
  compiled_ = read_xmodel(fixture(kResNetVck190));
  op_of_type("reshape-fix").type = "upsample-fix";
  EXPECT_NE(error_of(compiled_, &int_graph_).find("(upsample-fix): no `_int` form"),
            std::string::npos);
}

TEST_F(LowerCompiled, KnownNonlinearsBecomeActivations) {
  Op& conv = op_of_type("conv2d-fix");
  conv.attrs["nonlinear"] = std::string("RELU6");
  const std::string name = conv.name;
  Graph lowered = lower_compiled(compiled_, &int_graph_);
  EXPECT_EQ(lowered.op(name + "/relu6").type, "relu6");
  EXPECT_EQ(lowered.op(name).producers("input").front(), name + "/relu6");
  op_of_type("conv2d-fix").attrs["nonlinear"] = std::string("LEAKYRELU");
  lowered = lower_compiled(compiled_, &int_graph_);
  EXPECT_FLOAT_EQ(
      static_cast<float>(float_attr(lowered.op(name + "/leaky-relu").attrs, "alpha", 0)), 0.1F);
}

// A float CPU tail after the compiled ResNet-20's DPU subgraph (support/float_cpu_tail.hpp):
// ref on the lowered compiled file gives, byte for byte, ref on the `_int` file with the same
// ops as `op -> fix` chains, a float output's fix at the fix_point lower_float_ops.hpp gives it.
class FloatCpuTailTest : public LowerCompiled {
 protected:
  void SetUp() override {
    LowerCompiled::SetUp();
    if (IsSkipped()) return;  // no fixtures (a clone without ../shared): the base said why
    tail_.emplace(compiled_, int_graph_);
  }
  std::optional<testing::FloatCpuTail> tail_;
};

TEST_F(FloatCpuTailTest, EqualsRefOnTheIntFileByteForByte) {
  const int fp = tail_->fix_point();
  const auto& shape = tail_->shape();
  std::vector<std::int64_t> twice = shape;
  twice.back() *= 2;
  const AttrMap last_axis = {{"axis", std::int32_t{-1}}};
  tail_->add("tail_softmax", "softmax", 1, last_axis, shape, 7, 7);
  tail_->add("tail_sigmoid", "sigmoid", 1, {}, shape, std::nullopt, 7);  // a float output
  tail_->add("tail_concat", "concat", 2, last_axis, twice, fp, fp);
  tail_->add("tail_add", "add", 2, {}, shape, std::nullopt, fp - 1);  // a float output
  tail_->add("tail_relu", "relu", 1, {}, shape, std::nullopt, fp);    // a float output
  tail_->add("tail_gelu", "gelu", 1, {}, shape, std::nullopt, fp);    // a float output
  tail_->add("tail_hard_sigmoid", "hard-sigmoid", 1, {}, shape, 7, 7);

  const Graph lowered = lower_compiled(compiled_, &int_graph_);
  EXPECT_EQ(lowered.op("tail_softmax_float2fix").type, "fix");
  EXPECT_EQ(lowered.op("tail_sigmoid").type, "fix");  // the float output's closing fix
  ASSERT_EQ(lowered.outputs().size(), 7U);
  ASSERT_EQ(int_graph_.outputs().size(), 7U);
  int nonzero = 0;  // softmax values that are not 0
  for (std::uint64_t seed : {1U, 2U, 3U}) {
    const std::vector<QTensor> inputs = random_inputs(int_graph_, seed);
    const std::vector<QTensor> want = run_ref(int_graph_, inputs);
    const std::vector<QTensor> got = run_ref(lowered, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].shape, want[i].shape) << want[i].name;
      EXPECT_EQ(got[i].fix_point, want[i].fix_point) << want[i].name;
      EXPECT_EQ(got[i].data, want[i].data) << want[i].name << " seed " << seed;
    }
    for (std::int8_t v : got[0].data) nonzero += v != 0 ? 1 : 0;
  }
  EXPECT_GT(nonzero, 0);
}

TEST_F(FloatCpuTailTest, UnknownFloatOpsAndAttributesAreOneLineErrors) {
  tail_->add_compiled_only("tail_tanh", "tanh", {});
  std::string error = error_of(compiled_, &int_graph_);
  EXPECT_NE(error.find("lower_compiled: op 'tail_tanh' (tanh): no `_int` form for this op type"),
            std::string::npos)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  SetUp();
  tail_->add("tail_softmax", "softmax", 1, {{"axis", std::int32_t{-1}}}, tail_->shape(), 7, 7);
  for (Op& op : compiled_.mutable_ops())
    if (op.name == "tail_softmax_float2fix") op.attrs["bit_width"] = std::int32_t{16};
  error = error_of(compiled_, &int_graph_);
  EXPECT_NE(error.find("(float2fix): only signed 8-bit values are lowered"), std::string::npos)
      << error;
  SetUp();
  tail_->add_compiled_only("tail_softmax", "softmax", {{"dim", std::int32_t{-1}}});
  error = error_of(compiled_, &int_graph_);
  EXPECT_NE(error.find("(softmax): attribute 'dim' is not one the lowering knows"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace dpushard
