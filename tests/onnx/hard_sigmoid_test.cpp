// Vitis AI's rewrite of sigmoid-family activations for the DPU, `import`'s default
// (docs/import.md "Sigmoid, SiLU and the DPU"): SiLU becomes hard-swish, other sigmoids
// hard-sigmoid; the rewritten model still quantizes and runs on ref. --keep-sigmoid skips it.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpushard/graph/shape.hpp"
#include "dpushard/onnx/onnx_import.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/quant/quantize.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "harness.hpp"

namespace dpushard::onnxtest {
namespace {

// silu = x * sigmoid(x); out = sigmoid(silu) * x: a gate whose sigmoid is not a SiLU (its
// mul takes another tensor), as in a squeeze-excite block.
std::string silu_model() {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("silu");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {1, 4, 6, 6}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  const auto node = [&](const std::string& type, const std::string& name,
                        std::vector<std::string> inputs) {
    auto* n = g->add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(name);
  };
  node("Sigmoid", "sig1", {"x"});
  node("Mul", "silu", {"x", "sig1"});
  node("Sigmoid", "gate", {"silu"});
  node("Mul", "out", {"gate", "x"});
  g->add_output()->set_name("out");
  return m.SerializeAsString();
}

std::vector<std::string> types(const Graph& g) {
  std::vector<std::string> t;
  for (const Op& op : g.ops()) t.push_back(op.type);
  return t;
}

TEST(HardSigmoid, SiluBecomesHardSwishOtherSigmoidsHardSigmoid) {
  OnnxImport m = import_onnx_bytes(silu_model(), "silu.onnx");
  const auto before = types(m.graph);
  EXPECT_EQ(std::count(before.begin(), before.end(), "sigmoid"), 2);
  const HardSigmoidRewrite done = convert_sigmoid_to_hard(m.graph);
  EXPECT_EQ(done.silu_to_hard_swish, 1);
  EXPECT_EQ(done.sigmoid_to_hard_sigmoid, 1);
  const auto after = types(m.graph);
  EXPECT_EQ(std::count(after.begin(), after.end(), "sigmoid"), 0);
  const Op& silu = m.graph.op("silu");
  EXPECT_EQ(silu.type, "hard-swish");
  ASSERT_EQ(silu.producers("input").size(), 1u);
  EXPECT_EQ(m.graph.op(silu.producers("input")[0]).type, "data");
  EXPECT_EQ(m.graph.find("sig1"), nullptr);
  EXPECT_EQ(m.graph.op("gate").type, "hard-sigmoid");
  EXPECT_EQ(m.graph.op("out").type, "mul");  // the gate's mul stays an eltwise mul
  validate(m.graph);

  // The rewritten graph is the hard form of the function: it quantizes and ref runs it
  // close to the float interpreter.
  const CalibrationSet calib = random_calibration(m.graph, 3, 7);
  const Graph q = quantize(m.graph, calib);
  const auto x = calib.front();
  FloatInterpreter interp(m.graph);
  const auto want = interp.run(x);
  const auto got = run_int8(q, x);
  EXPECT_GT(cosine(got.at(0), want.at(0).data), 0.95);
}

TEST(HardSigmoid, NothingToRewriteIsANoOp) {
  OnnxImport m = import_onnx_bytes(silu_model(), "silu.onnx");
  convert_sigmoid_to_hard(m.graph);
  const Graph once = m.graph;
  const HardSigmoidRewrite again = convert_sigmoid_to_hard(m.graph);
  EXPECT_EQ(again.silu_to_hard_swish + again.sigmoid_to_hard_sigmoid, 0);
  EXPECT_TRUE(m.graph == once);
}

// `dpushard import` of an EfficientNet-style block exported by torch (SiLU after the stem
// and the depthwise conv, a squeeze-excite block with a SiLU and a sigmoid gate): by default
// the quantizer's DPUCZDX8G rewrite, everything on the DPU; --keep-sigmoid the old import.
class ImportDefault : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(work_dir("import_default_se"));
    ok_ = make_models("se " + dir_->string());
  }
  static void TearDownTestSuite() { delete dir_; }

  // Imports the model with `flags`; the JSON summary in `summary`.
  static Graph import(const std::string& flags, const std::string& name, nlohmann::json& summary) {
    const auto xmodel = *dir_ / (name + ".xmodel");
    std::string out;
    const int rc = run_cli("import '" + (*dir_ / "model.onnx").string() +
                               "' --calib-random 2 -o '" + xmodel.string() + "' --json " + flags,
                           out);
    EXPECT_EQ(rc, 0) << out;
    summary = nlohmann::json::parse(out);
    return read_xmodel(xmodel);
  }

  static std::filesystem::path* dir_;
  static bool ok_;
};
std::filesystem::path* ImportDefault::dir_ = nullptr;
bool ImportDefault::ok_ = false;

std::size_t count_type(const Graph& g, const std::string& type) {
  return static_cast<std::size_t>(
      std::count_if(g.ops().begin(), g.ops().end(), [&](const Op& op) { return op.type == type; }));
}

TEST_F(ImportDefault, SiluSigmoidAndSqueezeExciteRunOnTheDpu) {
  ASSERT_TRUE(ok_) << "make_models.py se failed";
  nlohmann::json summary;
  const Graph g = import("", "default", summary);
  EXPECT_TRUE(summary.at("hard_sigmoid").at("applied").get<bool>());
  EXPECT_EQ(summary.at("hard_sigmoid").at("silu_to_hard_swish").get<int>(), 3);
  EXPECT_EQ(summary.at("hard_sigmoid").at("sigmoid_to_hard_sigmoid").get<int>(), 1);
  EXPECT_EQ(count_type(g, "sigmoid"), 0u);
  EXPECT_EQ(count_type(g, "hard-swish"), 3u);
  EXPECT_EQ(count_type(g, "hard-sigmoid"), 1u);
  EXPECT_EQ(count_type(g, "mul"), 1u);  // the squeeze-excite gate's multiply stays a mul

  // As the DPUCZDX8G runs it: one DPU subgraph, nothing on the CPU.
  const Prediction p = predict(g, builtin_target("kv260"));
  EXPECT_EQ(p.dpu_subgraphs, 1);
  EXPECT_EQ(p.cpu_subgraphs, 0);
  EXPECT_DOUBLE_EQ(p.cpu_ms, 0.0);

  // --hard-sigmoid says the default explicitly: the same graph.
  nlohmann::json again;
  const Graph explicit_hard = import("--hard-sigmoid", "explicit", again);
  EXPECT_EQ(explicit_hard.size(), g.size());
  EXPECT_EQ(count_type(explicit_hard, "hard-swish"), 3u);
}

TEST_F(ImportDefault, KeepSigmoidLeavesThemOnTheCpu) {
  ASSERT_TRUE(ok_) << "make_models.py se failed";
  nlohmann::json summary;
  const Graph g = import("--keep-sigmoid", "keep", summary);
  EXPECT_FALSE(summary.at("hard_sigmoid").at("applied").get<bool>());
  EXPECT_EQ(summary.at("hard_sigmoid").at("silu_to_hard_swish").get<int>(), 0);
  EXPECT_EQ(count_type(g, "sigmoid"), 4u);
  EXPECT_EQ(count_type(g, "hard-swish") + count_type(g, "hard-sigmoid"), 0u);
  const Prediction p = predict(g, builtin_target("kv260"));
  EXPECT_EQ(p.cpu_subgraphs, 4);  // each sigmoid is a CPU subgraph of its own
  EXPECT_GT(p.cpu_ms, 0.0);

  // The two flags contradict each other: a usage error, no file written.
  std::string out;
  EXPECT_NE(run_cli("import '" + (*dir_ / "model.onnx").string() + "' -o '" +
                        (*dir_ / "x.xmodel").string() + "' --keep-sigmoid --hard-sigmoid 2>&1",
                    out),
            0);
  EXPECT_FALSE(std::filesystem::exists(*dir_ / "x.xmodel"));
}

}  // namespace
}  // namespace dpushard::onnxtest
