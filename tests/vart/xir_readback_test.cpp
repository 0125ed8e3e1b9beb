// The real XIR 3.5 (built from ../shared/vitis-ai-runtime, tests/vart/xir) reads every kind
// of xmodel dpushard writes, and sees what dpushard's own reader sees in the same bytes: the
// same ops with the same types, attributes, args and output tensors, the same graph
// attributes and the same subgraph tree; for an op type XIR does not define (layernorm), what
// dpushard means in the form of XIR's automatic definition. An oracle for the writer that
// nobody here wrote.

#include <gtest/gtest.h>
#include <unistd.h>

#include <xir/graph/graph.hpp>
#include <xir/util/data_type.hpp>

#include "graph_proto_v2.pb.h"  // XIR's own schema, generated in tests/vart/xir

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/onnx/onnx_import.hpp"
#include "dpushard/quant/quantize.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/micro.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "xir_view.hpp"

namespace dpushard {
namespace {

using vart_test::graph_from_xir;

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Both views in one comparable form: args sorted by name without empty ones, subgraph ops
// sorted (XIR keeps sets), ops keyed by name.
std::map<std::string, Op> ops_by_name(const Graph& g) {
  std::map<std::string, Op> out;
  for (Op op : g.ops()) {
    std::erase_if(op.args, [](const OpArg& a) { return a.producers.empty(); });
    std::sort(op.args.begin(), op.args.end(),
              [](const OpArg& a, const OpArg& b) { return a.name < b.name; });
    out.emplace(op.name, std::move(op));
  }
  return out;
}

// The first difference between two subgraph trees, or "".
std::string tree_difference(const Subgraph& xir, const Subgraph& ours, const std::string& path) {
  const std::string here = path + "/" + ours.name;
  if (xir.name != ours.name) return here + ": XIR names it '" + xir.name + "'";
  if (xir.ops != ours.ops)
    return here + ": " + std::to_string(xir.ops.size()) + " ops in XIR, " +
           std::to_string(ours.ops.size()) + " here";
  for (const auto& [key, value] : ours.attrs) {
    const auto it = xir.attrs.find(key);
    if (it == xir.attrs.end()) return here + ": XIR lacks attribute '" + key + "'";
    if (!(it->second == value)) return here + ": attribute '" + key + "' differs";
  }
  for (const auto& [key, value] : xir.attrs)
    if (!ours.attrs.contains(key)) return here + ": XIR adds attribute '" + key + "'";
  if (xir.children.size() != ours.children.size())
    return here + ": " + std::to_string(xir.children.size()) + " children in XIR, " +
           std::to_string(ours.children.size()) + " here";
  for (std::size_t i = 0; i < ours.children.size(); ++i)
    if (auto d = tree_difference(xir.children[i], ours.children[i], here); !d.empty()) return d;
  return "";
}

// Sorts ops and children as XIR's sets do. A file lists the ops of leaf subgraphs only; XIR
// gives a parent the ops of all its descendants.
void sort_tree(Subgraph& s) {
  for (Subgraph& c : s.children) sort_tree(c);
  if (!s.children.empty()) {
    std::vector<std::string> all = s.ops;
    for (const Subgraph& c : s.children) all.insert(all.end(), c.ops.begin(), c.ops.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    s.ops = std::move(all);
  }
  std::sort(s.ops.begin(), s.ops.end());
  std::sort(s.children.begin(), s.children.end(),
            [](const Subgraph& a, const Subgraph& b) { return a.name < b.name; });
}

// The op types dpushard writes that XIR does not define, with the operands in the order the
// file lists them in XIR's one `input` arg (docs/xmodel.md, "Op types XIR does not define").
// Written here from the documentation, not taken from the codec.
const std::map<std::string, std::vector<std::string>> kNotInXir = {
    {"layernorm", {"input", "gamma", "beta"}}};

// What dpushard means by `op`, as XIR's automatic definition holds it: the operands in
// `input`, the output's dims as `shape` (int32) and its data type as `data_type` in XIR's own
// spelling (xir::DataType::to_string, "FLOAT32").
Op as_xir_holds_it(const Op& op) {
  Op out = op;
  OpArg input{"input", {}};
  for (const std::string& operand : kNotInXir.at(op.type)) {
    const auto& producers = op.producers(operand);
    input.producers.insert(input.producers.end(), producers.begin(), producers.end());
  }
  out.args = {input};
  out.attrs["shape"] = std::vector<std::int32_t>(op.output.shape.begin(), op.output.shape.end());
  out.attrs["data_type"] =
      xir::DataType{static_cast<xir::DataType::Type>(op.output.data_type), op.output.bit_width}
          .to_string();
  return out;
}

// Checks that the real XIR reads `bytes` and sees what dpushard's reader sees (for an op of
// a type XIR does not define, what it means in XIR's form); counts those ops in `undefined`.
void expect_same_view(const std::string& bytes, const std::string& what,
                      std::size_t* undefined = nullptr) {
  SCOPED_TRACE(what);
  const Graph ours = parse_xmodel(bytes, what);
  std::unique_ptr<xir::Graph> xir_graph;
  ASSERT_NO_THROW(xir_graph = xir::Graph::deserialize_from_string(bytes));
  ASSERT_TRUE(xir_graph);
  const Graph theirs = graph_from_xir(*xir_graph);
  const auto defaults = vart_test::op_defaults_from_xir(*xir_graph);
  const auto not_defined = vart_test::ops_xir_does_not_define(*xir_graph);
  if (undefined != nullptr) *undefined += not_defined.size();

  EXPECT_EQ(theirs.name(), ours.name());
  EXPECT_EQ(theirs.attrs(), ours.attrs()) << "graph attributes";
  const auto a = ops_by_name(ours);
  const auto b = ops_by_name(theirs);
  ASSERT_EQ(b.size(), a.size()) << "op count";
  std::size_t differing = 0;
  for (const auto& [name, op] : a) {
    const auto it = b.find(name);
    if (it == b.end()) {
      ADD_FAILURE() << "XIR has no op '" << name << "'";
      continue;
    }
    const Op& x = it->second;
    // Every op type XIR lacks is written in its automatic form, and only those.
    const bool automatic = kNotInXir.contains(op.type);
    EXPECT_EQ(not_defined.contains(name), automatic)
        << name << " (" << op.type << "): "
        << (automatic ? "XIR defines this type: drop it from kNotInXir and the codec's table"
                      : "XIR does not define this type: add it to the codec's table "
                        "(core/src/xmodel/automatic_form.cpp)");
    // XIR fills in the defaults of optional attributes the file leaves out.
    Op filled = automatic ? as_xir_holds_it(op) : op;
    for (const auto& [key, value] : defaults.at(name))
      if (x.attrs.contains(key) && !filled.attrs.contains(key)) filled.attrs[key] = value;
    if (x == filled) continue;
    if (++differing > 5) continue;  // the first few are enough to see what is wrong
    EXPECT_EQ(x.type, filled.type) << name;
    EXPECT_EQ(x.args, filled.args) << name << ": args";
    EXPECT_EQ(x.output.name, filled.output.name) << name;
    EXPECT_EQ(x.output.shape, filled.output.shape) << name << ": shape";
    EXPECT_EQ(x.output.data_type, filled.output.data_type) << name << ": data type";
    EXPECT_EQ(x.output.bit_width, filled.output.bit_width) << name << ": bit width";
    EXPECT_EQ(x.output.attrs, filled.output.attrs) << name << ": tensor attributes";
    for (const auto& [key, value] : filled.attrs) {
      const auto found = x.attrs.find(key);
      if (found == x.attrs.end())
        ADD_FAILURE() << name << ": XIR lacks attribute '" << key << "'";
      else if (!(found->second == value))
        ADD_FAILURE() << name << ": attribute '" << key << "' is " << attr_kind_name(found->second)
                      << " in XIR, " << attr_kind_name(value) << " here, or differs";
    }
    for (const auto& [key, value] : x.attrs) {
      if (filled.attrs.contains(key)) continue;
      const AttrMap& d = defaults.at(name);
      const auto found = d.find(key);
      if (found == d.end() || !(found->second == value))
        ADD_FAILURE() << name << ": XIR adds attribute '" << key << "', not its default";
    }
  }
  EXPECT_EQ(differing, 0u) << "ops that differ";

  ASSERT_EQ(theirs.root().has_value(), ours.root().has_value()) << "subgraph tree";
  if (ours.root()) {
    Subgraph mine = *ours.root();
    sort_tree(mine);
    EXPECT_EQ(tree_difference(*theirs.root(), mine, ""), "") << "subgraph tree";
  }
}

void expect_same_view(const Graph& graph) {
  expect_same_view(serialize_xmodel(graph), "dpushard-written '" + graph.name() + "'");
}

ZooSpec small_zoo(std::int64_t params) {
  ZooSpec s;
  s.params = params;
  s.experts = 2;
  s.input = {32, 32, 3};
  s.classes = 10;
  return s;
}

// The ConvViT with layernorms: softmax attention (the gated one has none).
Graph softmax_convvit(std::int64_t params) {
  ZooSpec s = small_zoo(params);
  s.attention = ConvVitAttention::Softmax;
  return make_convvit(s);
}

const std::filesystem::path kFixtures = DPUSHARD_FIXTURE_DIR;

TEST(XirReadback, CompiledFixturesAsTheyAre) {
  for (const char* file : {"mobilenetv2_yawn_compiled_dpuczdx8g_kv260_vai25.xmodel",
                           "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel",
                           "resnet20_cifar10_int_quantized.xmodel"})
    expect_same_view(file_bytes(kFixtures / file), file);
}

TEST(XirReadback, FixturesRewrittenByDpushard) {
  for (const char* file : {"mobilenetv2_yawn_compiled_dpuczdx8g_kv260_vai25.xmodel",
                           "resnet20_cifar10_compiled_dpucvdx8g_vck190_vai35.xmodel",
                           "resnet20_cifar10_int_quantized.xmodel"})
    expect_same_view(read_xmodel(kFixtures / file));
}

TEST(XirReadback, ZooModels) { expect_same_view(make_cnn(small_zoo(1'000'000))); }

// XIR has no `layernorm` op: the writer puts it in the form of XIR's automatic definition
// (docs/xmodel.md), and the real XIR reads the ConvViT zoo model with every layernorm in it.
TEST(XirReadback, ConvVitZooModel) {
  const Graph convvit = softmax_convvit(1'000'000);
  const auto layernorms =
      static_cast<std::size_t>(std::count_if(convvit.ops().begin(), convvit.ops().end(),
                                             [](const Op& op) { return op.type == "layernorm"; }));
  ASSERT_GE(layernorms, 3u);
  std::size_t undefined = 0;
  expect_same_view(serialize_xmodel(convvit), "convvit", &undefined);
  EXPECT_EQ(undefined, layernorms);
}

// The gated ConvViT (the default) uses only XIR built-in ops: depthwise-conv2d,
// hard-sigmoid, hard-swish, mul, avgpool2d; the real XIR reads it with nothing undefined.
TEST(XirReadback, GatedConvVitZooModel) {
  const Graph gated = make_convvit(small_zoo(1'000'000));
  std::size_t undefined = 0;
  expect_same_view(serialize_xmodel(gated), "convvit_gated", &undefined);
  EXPECT_EQ(undefined, 0u);
}

// The form dpushard wrote before (layernorm with `gamma` and `beta` args, no `shape` or
// `data_type`) still makes the real XIR abort, with or without an OpDef for it in the file
// (Graph field 101, where XIR's own writer stores the definitions of the op types a graph
// uses): XIR 3.5's reader converts the file's op_defs and drops them (serialize_v2.cpp). This
// is why the writer fits XIR's automatic definition and does not add an OpDef; dpushard's own
// reader still reads that form (XmodelAutomaticForm.FilesOfTheEarlierFormStillRead).
TEST(XirReadback, TheEarlierLayernormFormDiesEvenWithAnOpDef) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Graph convvit = softmax_convvit(1'000'000);
  serial_v2::Graph file;
  ASSERT_TRUE(file.ParseFromString(serialize_xmodel(convvit)));
  int rewritten = 0;
  for (serial_v2::OPNode& node : *file.mutable_op_node()) {
    if (node.op_type() != "layernorm") continue;
    ASSERT_EQ(node.args_size(), 1);
    ASSERT_EQ(node.args(0).arg_ops_size(), 3);
    const std::vector<std::string> ops(node.args(0).arg_ops().begin(),
                                       node.args(0).arg_ops().end());
    node.clear_args();
    for (std::size_t i = 0; i < 3; ++i) {
      serial_v2::OpArg* arg = node.add_args();
      arg->set_arg_name(std::vector<std::string>{"input", "gamma", "beta"}[i]);
      arg->add_arg_ops(ops[i]);
    }
    node.mutable_op_attr()->erase("shape");
    node.mutable_op_attr()->erase("data_type");
    ++rewritten;
  }
  ASSERT_GE(rewritten, 3);
  const std::string earlier = file.SerializeAsString();
  EXPECT_TRUE(parse_xmodel(earlier, "earlier") == convvit);
  EXPECT_DEATH(xir::Graph::deserialize_from_string(earlier),
               "type: layernorm, is not defined in XIR");

  serial_v2::OpDef* def = file.add_op_defs();
  def->set_name("layernorm");
  for (const char* arg : {"input", "gamma", "beta"}) {
    serial_v2::OpArgDef* input_arg = def->add_input_args();
    input_arg->set_name(arg);
    input_arg->set_occur_type(serial_v2::OpArgDef::REQUIRED);
  }
  const std::string with_def = file.SerializeAsString();
  EXPECT_DEATH(xir::Graph::deserialize_from_string(with_def),
               "type: layernorm, is not defined in XIR");
}

TEST(XirReadback, PlanFragments) {
  for (const std::string strategy : {"pipeline", "experts"}) {
    SplitOptions options;
    options.nodes = 3;
    options.strategy = strategy;
    const SplitResult result = split_model(make_cnn(small_zoo(2'000'000)), options);
    ASSERT_GE(result.fragments.size(), 2u);
    for (const Graph& fragment : result.fragments) expect_same_view(fragment);
  }
}

// The ConvViT's fragments: the layernorms land in them, and the real XIR reads every one.
TEST(XirReadback, ConvVitPlanFragments) {
  for (const std::string strategy : {"pipeline", "experts"}) {
    SplitOptions options;
    options.nodes = 3;
    options.strategy = strategy;
    const SplitResult result = split_model(softmax_convvit(2'000'000), options);
    ASSERT_GE(result.fragments.size(), 2u);
    std::size_t layernorms = 0;
    std::size_t undefined = 0;
    for (const Graph& fragment : result.fragments) {
      for (const Op& op : fragment.ops()) layernorms += op.type == "layernorm";
      expect_same_view(serialize_xmodel(fragment), "fragment '" + fragment.name() + "'",
                       &undefined);
    }
    EXPECT_GE(layernorms, 3u);
    EXPECT_EQ(undefined, layernorms);
  }
}

TEST(XirReadback, MicroModels) {
  int read = 0;
  for (const MicroModelInfo& info : micro_models()) {
    expect_same_view(make_micro_model(info.name));
    ++read;
  }
  EXPECT_GE(read, 10);
}

// torchvision's ResNet-18 (random weights, 32x32) exported to ONNX by Debian's PyTorch,
// imported and quantized by dpushard.
TEST(XirReadback, ImportedModel) {
  const std::filesystem::path dir = std::filesystem::path(DPUSHARD_VART_TEST_WORK) / "resnet18";
  std::filesystem::create_directories(dir);
  if (!std::filesystem::exists(dir / "model.onnx")) {
    const std::string command = "/usr/bin/python3 '" + std::string(DPUSHARD_SOURCE_DIR) +
                                "/tests/onnx/make_models.py' torchvision resnet18 '" +
                                dir.string() + "' --size 32 >'" + (dir / "python.log").string() +
                                "' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "see " << (dir / "python.log");
  }
  const Graph float_graph = import_onnx(dir / "model.onnx").graph;
  expect_same_view(quantize(float_graph, random_calibration(float_graph, 2, 3)));
}

// The conv-stem vision transformer of the ONNX tests (tests/onnx/make_models.py vit, trained
// on digits by Debian's PyTorch), imported and quantized by dpushard: opset 13 (LayerNorm
// decomposed into ReduceMean, Sub, Pow, ...; the importer finds the pattern) and opset 17 (native
// LayerNormalization, q, k, v by Split).
TEST(XirReadback, ImportedTransformer) {
  const std::filesystem::path dir = std::filesystem::path(DPUSHARD_VART_TEST_WORK) / "vit";
  std::filesystem::create_directories(dir);
  if (!std::filesystem::exists(dir / "model_unbind17.onnx")) {
    const std::string command = "/usr/bin/python3 '" + std::string(DPUSHARD_SOURCE_DIR) +
                                "/tests/onnx/make_models.py' vit '" + dir.string() + "' >'" +
                                (dir / "python.log").string() + "' 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << "see " << (dir / "python.log");
  }
  for (const char* file : {"model.onnx", "model_unbind17.onnx"}) {
    const Graph float_graph = import_onnx(dir / file).graph;
    const Graph quantized = quantize(float_graph, random_calibration(float_graph, 2, 3));
    const auto layernorms = static_cast<std::size_t>(
        std::count_if(quantized.ops().begin(), quantized.ops().end(),
                      [](const Op& op) { return op.type == "layernorm"; }));
    EXPECT_GE(layernorms, 5u) << file;  // two per block, depth 2, and the final norm
    std::size_t undefined = 0;
    expect_same_view(serialize_xmodel(quantized), file, &undefined);
    EXPECT_EQ(undefined, layernorms) << file;
  }
}

}  // namespace
}  // namespace dpushard
