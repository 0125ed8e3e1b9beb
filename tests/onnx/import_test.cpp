// The importer against PyTorch, op pattern by op pattern (tests/onnx/op_cases.py), and
// its errors on bad or unsupported input.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/onnx/onnx_import.hpp"
#include "dpushard/quant/quantize.hpp"
#include "harness.hpp"

namespace dpushard::onnxtest {
namespace {

std::vector<std::string> read_lines(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

TEST(OnnxOpCases, FloatGraphMatchesPyTorchAndQuantizedRunsOnRef) {
  const auto dir = work_dir("op_cases");
  ASSERT_TRUE(make_models("ops " + dir.string()))
      << "see " << DPUSHARD_ONNX_WORK << "/python_*.err";
  const auto cases = read_lines(dir / "cases.txt");
  ASSERT_GE(cases.size(), 30u);
  for (const auto& name : cases) {
    SCOPED_TRACE(name);
    const auto cdir = dir / name;
    if (name.rfind("unsupported_", 0) == 0) {
      EXPECT_THROW(import_onnx(cdir / "model.onnx"), Error);
      continue;
    }
    OnnxImport imported;
    ASSERT_NO_THROW(imported = import_onnx(cdir / "model.onnx"));
    const FloatTensor x = read_float_npy(cdir / "input.npy");
    const FloatTensor expected = read_float_npy(cdir / "output.npy");
    const auto& in_shape = imported.graph.inputs().at(0)->output.shape;
    FloatInterpreter interp(imported.graph);
    const auto out = interp.run({to_input_layout(x, in_shape, name)});
    ASSERT_EQ(out.size(), 1u);
    const std::vector<float> want = in_ir_layout(expected, out[0].shape);
    const double err = relative_error(out[0].data, want);
    EXPECT_LT(err, 1e-4) << "float graph differs from PyTorch";

    // Quantized: calibrate on the input and a few random ones, run on ref.
    CalibrationSet calib = random_calibration(imported.graph, 3, 7);
    calib.push_back({to_input_layout(x, in_shape, name)});
    Graph q;
    ASSERT_NO_THROW(q = quantize(imported.graph, calib));
    ASSERT_NO_THROW(validate(q));
    for (const Op* o : q.outputs()) EXPECT_TRUE(fix_point_of(q, o->name).has_value()) << o->name;
    std::vector<std::vector<float>> y;
    ASSERT_NO_THROW(y = run_int8(q, {to_input_layout(x, in_shape, name)}));
    const double cos = cosine(y.at(0), want);
    std::cout << "  " << name << ": float rel err " << err << ", int8 cosine " << cos << "\n";
    EXPECT_GT(cos, 0.95) << "int8 output far from float";
  }
}

std::string tiny_model(const std::string& op_type, const std::string& node_name, int opset) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {1, 3, 4, 4}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto* n = g->add_node();
  n->set_op_type(op_type);
  n->set_name(node_name);
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

TEST(OnnxErrors, UnsupportedOpNamesTypeAndNode) {
  try {
    import_onnx_bytes(tiny_model("Hardmax", "/head/weird", 13), "m.onnx");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("m.onnx"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'Hardmax'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'/head/weird'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// docs/import.md is what users read to know whether their model imports: it must name every
// op type the converter maps (its handler table), so a new handler needs its line there.
TEST(OnnxImport, DocsNameEverySupportedOp) {
  std::ifstream in(std::filesystem::path(DPUSHARD_SOURCE_DIR) / "docs" / "import.md");
  ASSERT_TRUE(in) << "docs/import.md";
  const std::string docs((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto ops = supported_onnx_ops();
  EXPECT_GE(ops.size(), 30u);
  for (const std::string& op : ops) {
    EXPECT_EQ(std::count(ops.begin(), ops.end(), op), 1) << op;
    // As a word of its own: "Relu" must not pass by "LeakyRelu".
    const std::regex word("(^|[^A-Za-z])" + op + "([^A-Za-z]|$)");
    EXPECT_TRUE(std::regex_search(docs, word)) << "docs/import.md does not name " << op;
  }
}

TEST(OnnxErrors, OpsetOutOfRange) {
  EXPECT_THROW(import_onnx_bytes(tiny_model("Relu", "r", 9), "m.onnx"), Error);
  EXPECT_THROW(import_onnx_bytes(tiny_model("Relu", "r", 19), "m.onnx"), Error);
  EXPECT_NO_THROW(import_onnx_bytes(tiny_model("Relu", "r", 11), "m.onnx"));
  EXPECT_NO_THROW(import_onnx_bytes(tiny_model("Relu", "r", 17), "m.onnx"));
}

TEST(OnnxErrors, GarbageAndMissingFiles) {
  EXPECT_THROW(import_onnx_bytes("definitely not a protobuf \xff\xff\xff", "bad.onnx"), Error);
  EXPECT_THROW(import_onnx("/nonexistent/model.onnx"), Error);
}

TEST(OnnxImport, NchwInputBecomesNhwcData) {
  const OnnxImport m = import_onnx_bytes(tiny_model("Relu", "r", 13), "m.onnx");
  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].onnx_shape, (std::vector<std::int64_t>{1, 3, 4, 4}));
  EXPECT_EQ(m.inputs[0].ir_shape, (std::vector<std::int64_t>{1, 4, 4, 3}));
  EXPECT_EQ(m.mapped_ops.at("Relu"), 1);
}

TEST(Quantize, BestFixPointPrefersLeastError) {
  // max 1.0 fits fix point 6 (127/64); one outlier among many small values makes fix
  // point 8 better despite clipping it: 1e5 * (0.013 - 3/256)^2 + (1 - 127/256)^2 = 0.42
  // against 1e5 * (0.013 - 1/64)^2 = 0.69 at 6 and 0.61 at 9.
  std::vector<float> v(100000, 0.013f);
  v.push_back(1.0f);
  EXPECT_EQ(max_fix_point(1.0), 6);
  EXPECT_EQ(best_fix_point(v, RoundMode::Std, 6, 9), 8);
  const std::vector<float> w = {0.5f, -0.25f, 0.75f};
  EXPECT_EQ(best_fix_point(w, RoundMode::Std, max_fix_point(0.75), max_fix_point(0.75) + 3),
            max_fix_point(0.75));
}

TEST(Quantize, NpyRoundTripAndLayouts) {
  const auto dir = work_dir("npy");
  FloatTensor t{{1, 2, 3, 4}, {}};
  for (int i = 0; i < 24; ++i) t.data.push_back(static_cast<float>(i));
  write_float_npy(dir / "a.npy", t);
  const FloatTensor r = read_float_npy(dir / "a.npy");
  EXPECT_EQ(r.shape, t.shape);
  EXPECT_EQ(r.data, t.data);
  // [1, 2, 3, 4] as NCHW of an NHWC input [1, 3, 4, 2]: element (c=1, h=0, w=1) = 13.
  const FloatTensor nhwc = to_input_layout(t, {1, 3, 4, 2}, "a");
  EXPECT_EQ(nhwc.data[(0 * 4 + 1) * 2 + 1], 13.0f);
  EXPECT_THROW(to_input_layout(t, {1, 5, 5, 1}, "a"), Error);
  std::ofstream(dir / "bad.npy") << "nope";
  EXPECT_THROW(read_float_npy(dir / "bad.npy"), Error);
}

}  // namespace
}  // namespace dpushard::onnxtest
