// The real XIR 3.5 (built from ../shared/vitis-ai-runtime, tests/vart/xir) reads every kind
// of xmodel dpushard writes, and sees what dpushard's own reader sees in the same bytes: the
// same ops with the same types, attributes, args and output tensors, the same graph
// attributes and the same subgraph tree. An oracle for the writer that nobody here wrote.

#include <gtest/gtest.h>
#include <unistd.h>

#include <xir/graph/graph.hpp>

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

#include "dpushard/error.hpp"
#include "dpushard/micro.hpp"
#include "dpushard/onnx_import.hpp"
#include "dpushard/quantize.hpp"
#include "dpushard/split.hpp"
#include "dpushard/xmodel.hpp"
#include "dpushard/zoo.hpp"
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

// Checks that the real XIR reads `bytes` and sees what dpushard's reader sees.
void expect_same_view(const std::string& bytes, const std::string& what) {
  SCOPED_TRACE(what);
  const Graph ours = parse_xmodel(bytes, what);
  std::unique_ptr<xir::Graph> xir_graph;
  ASSERT_NO_THROW(xir_graph = xir::Graph::deserialize_from_string(bytes));
  ASSERT_TRUE(xir_graph);
  const Graph theirs = graph_from_xir(*xir_graph);
  const auto defaults = vart_test::op_defaults_from_xir(*xir_graph);

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
    // XIR fills in the defaults of optional attributes the file leaves out.
    Op filled = op;
    for (const auto& [key, value] : defaults.at(name))
      if (x.attrs.contains(key) && !filled.attrs.contains(key)) filled.attrs[key] = value;
    if (x == filled) continue;
    if (++differing > 5) continue;  // the first few are enough to see what is wrong
    EXPECT_EQ(x.type, op.type) << name;
    EXPECT_EQ(x.args, op.args) << name << ": args";
    EXPECT_EQ(x.output.name, op.output.name) << name;
    EXPECT_EQ(x.output.shape, op.output.shape) << name << ": shape";
    EXPECT_EQ(x.output.data_type, op.output.data_type) << name << ": data type";
    EXPECT_EQ(x.output.bit_width, op.output.bit_width) << name << ": bit width";
    EXPECT_EQ(x.output.attrs, op.output.attrs) << name << ": tensor attributes";
    for (const auto& [key, value] : op.attrs) {
      const auto found = x.attrs.find(key);
      if (found == x.attrs.end())
        ADD_FAILURE() << name << ": XIR lacks attribute '" << key << "'";
      else if (!(found->second == value))
        ADD_FAILURE() << name << ": attribute '" << key << "' is " << attr_kind_name(found->second)
                      << " in XIR, " << attr_kind_name(value) << " here, or differs";
    }
    for (const auto& [key, value] : x.attrs) {
      if (op.attrs.contains(key)) continue;
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

bool has_layernorm(const Graph& g) {
  return std::any_of(g.ops().begin(), g.ops().end(),
                     [](const Op& op) { return op.type == "layernorm"; });
}

TEST(XirReadback, ZooModels) { expect_same_view(make_cnn(small_zoo(1'000'000))); }

// A finding of this test, not fixed yet: XIR has no `layernorm` op. For an op it does not
// define, XIR makes a definition on the fly that takes one arg, `input`, and requires the
// attributes `shape` and `data_type`; dpushard's layernorm has `gamma` and `beta` args and
// neither attribute, so the real XIR aborts reading any graph with one (the convvit zoo
// models, their fragments, ONNX transformers, the layernorm micro-model). An OpDef in the
// file does not help (LayernormOpDefInTheFileDoesNotHelp): the writer must fit XIR's
// automatic definition (the three operands in `input`, the two attributes; docs/vart.md).
// This test pins the failure; it fails once the writer is fixed, and should then go.
TEST(XirReadback, LayernormIsNotReadableYet) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Graph convvit = make_convvit(small_zoo(1'000'000));
  ASSERT_TRUE(has_layernorm(convvit));
  const std::string bytes = serialize_xmodel(convvit);
  EXPECT_DEATH(xir::Graph::deserialize_from_string(bytes),
               "type: layernorm, is not defined in XIR");
}

// What the writer might add: an OpDef for `layernorm` in the file (Graph field 101, where XIR's
// own writer stores the definitions of the op types a graph uses), with dpushard's three args.
// XIR 3.5's reader converts the file's op_defs and drops them (serialize_v2.cpp), so the
// graph still dies the same way: the fix is not an OpDef (docs/vart.md, "Not done yet").
TEST(XirReadback, LayernormOpDefInTheFileDoesNotHelp) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const Graph convvit = make_convvit(small_zoo(1'000'000));
  serial_v2::Graph definitions;
  serial_v2::OpDef* def = definitions.add_op_defs();
  def->set_name("layernorm");
  for (const char* arg : {"input", "gamma", "beta"}) {
    serial_v2::OpArgDef* input_arg = def->add_input_args();
    input_arg->set_name(arg);
    input_arg->set_occur_type(serial_v2::OpArgDef::REQUIRED);
  }
  // Two serialized messages one after the other parse as one, op_defs appended.
  const std::string bytes = serialize_xmodel(convvit) + definitions.SerializeAsString();
  serial_v2::Graph parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(parsed.op_defs_size(), 1);
  EXPECT_DEATH(xir::Graph::deserialize_from_string(bytes),
               "type: layernorm, is not defined in XIR");
}

TEST(XirReadback, PlanFragments) {
  for (Strategy strategy : {Strategy::Pipeline, Strategy::Experts}) {
    SplitOptions options;
    options.nodes = 3;
    options.strategy = strategy;
    const SplitResult result = split_model(make_cnn(small_zoo(2'000'000)), options);
    ASSERT_GE(result.fragments.size(), 2u);
    for (const Graph& fragment : result.fragments) expect_same_view(fragment);
  }
}

TEST(XirReadback, MicroModels) {
  int read = 0;
  for (const MicroModelInfo& info : micro_models()) {
    const Graph g = make_micro_model(info.name);
    if (has_layernorm(g)) continue;  // LayernormIsNotReadableYet
    expect_same_view(g);
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

}  // namespace
}  // namespace dpushard
