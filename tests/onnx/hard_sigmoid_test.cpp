// `import --hard-sigmoid`: Vitis AI's rewrite of sigmoid-family activations for the DPU
// (docs/import.md "Sigmoid, SiLU and the DPU"): SiLU becomes hard-swish, other sigmoids
// hard-sigmoid; the rewritten model still quantizes and runs on ref.

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dpushard/onnx_import.hpp"
#include "dpushard/quantize.hpp"
#include "dpushard/shape.hpp"
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

}  // namespace
}  // namespace dpushard::onnxtest
