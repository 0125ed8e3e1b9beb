// Op types XIR does not define (layernorm) are written in the form of XIR's automatic
// definition (operands in one `input` arg, `shape` and `data_type` attributes) and read back
// into the IR's named args; files of the earlier form still read (docs/xmodel.md).

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/micro.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "xmodel.pb.h"

namespace dpushard {
namespace {

Graph layernorm_graph() {
  GraphBuilder b("ln");
  const Value x = b.input("x", {1, 5, 8}, 5);
  const Value gamma = b.constant("gamma", {8}, std::vector<std::int8_t>(8, 64), 6);
  const Value beta = b.constant("beta", {8}, std::vector<std::int8_t>(8, -3), 7);
  b.layernorm("norm", x, gamma, beta, 1e-5, 5);
  return b.finish();
}

xmodel::pb::Graph proto_of(const std::string& bytes) {
  xmodel::pb::Graph g;
  EXPECT_TRUE(g.ParseFromString(bytes));
  return g;
}

xmodel::pb::OPNode* node_named(xmodel::pb::Graph& g, const std::string& name) {
  for (auto& node : *g.mutable_op_node())
    if (node.op_name() == name) return &node;
  ADD_FAILURE() << "no op " << name;
  return nullptr;
}

// As dpushard's writer orders a message: fields ascending, map entries sorted.
std::string deterministic(const xmodel::pb::Graph& g) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    EXPECT_TRUE(g.SerializeToCodedStream(&out));
  }
  return bytes;
}

std::string error_of(const Graph& g) {
  try {
    serialize_xmodel(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(XmodelAutomaticForm, LayernormIsWrittenAsXirDefinesIt) {
  const Graph built = layernorm_graph();
  const std::string bytes = serialize_xmodel(built);
  xmodel::pb::Graph file = proto_of(bytes);
  const xmodel::pb::OPNode* node = node_named(file, "norm");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->op_type(), "layernorm");
  ASSERT_EQ(node->args_size(), 1);
  EXPECT_EQ(node->args(0).arg_name(), "input");
  EXPECT_EQ(
      std::vector<std::string>(node->args(0).arg_ops().begin(), node->args(0).arg_ops().end()),
      (std::vector<std::string>{"x_fix", "gamma_fix", "beta_fix"}));
  ASSERT_TRUE(node->op_attr().contains("shape"));
  const auto& shape = node->op_attr().at("shape");
  ASSERT_TRUE(shape.has_int32_vec_value());
  EXPECT_EQ(std::vector<std::int32_t>(shape.int32_vec_value().value().begin(),
                                      shape.int32_vec_value().value().end()),
            (std::vector<std::int32_t>{1, 5, 8}));
  ASSERT_TRUE(node->op_attr().contains("data_type"));
  EXPECT_EQ(node->op_attr().at("data_type").string_value(), "FLOAT32");
  EXPECT_TRUE(node->op_attr().contains("epsilon"));
  EXPECT_EQ(node->output_tensor().tensor_dim_size(), 3);

  // Read back: the IR's named args, no file attributes; written again: the same bytes.
  const Graph again = parse_xmodel(bytes, "memory");
  EXPECT_TRUE(again == built);
  const Op& norm = again.op("norm");
  ASSERT_EQ(norm.args.size(), 3u);
  EXPECT_EQ(norm.producers("gamma"), std::vector<std::string>{"gamma_fix"});
  EXPECT_EQ(norm.producers("beta"), std::vector<std::string>{"beta_fix"});
  EXPECT_FALSE(norm.attrs.contains("shape"));
  EXPECT_FALSE(norm.attrs.contains("data_type"));
  EXPECT_EQ(serialize_xmodel(again), bytes);
}

// The form dpushard wrote before: `input`, `gamma` and `beta` args, no `shape`/`data_type`.
TEST(XmodelAutomaticForm, FilesOfTheEarlierFormStillRead) {
  const Graph built = layernorm_graph();
  const std::string bytes = serialize_xmodel(built);
  xmodel::pb::Graph file = proto_of(bytes);
  xmodel::pb::OPNode* node = node_named(file, "norm");
  ASSERT_NE(node, nullptr);
  node->mutable_op_attr()->erase("shape");
  node->mutable_op_attr()->erase("data_type");
  node->clear_args();
  for (const char* arg : {"input", "gamma", "beta"}) node->add_args()->set_arg_name(arg);
  node->mutable_args(0)->add_arg_ops("x_fix");
  node->mutable_args(1)->add_arg_ops("gamma_fix");
  node->mutable_args(2)->add_arg_ops("beta_fix");
  const std::string old_bytes = file.SerializeAsString();
  ASSERT_NE(old_bytes, bytes);
  const Graph read = parse_xmodel(old_bytes, "old.xmodel");
  EXPECT_TRUE(read == built);
  EXPECT_EQ(serialize_xmodel(read), bytes);  // rewritten in XIR's form
}

// A layernorm in XIR's form that does not match it exactly (another tool's: `shape` is not
// its output's dims) stays as it is, and is written back byte for byte.
TEST(XmodelAutomaticForm, AnInexactFileFormIsKeptAsItIs) {
  const std::string bytes = serialize_xmodel(layernorm_graph());
  for (const char* change : {"shape", "data_type", "operands"}) {
    SCOPED_TRACE(change);
    xmodel::pb::Graph file = proto_of(bytes);
    xmodel::pb::OPNode* node = node_named(file, "norm");
    ASSERT_NE(node, nullptr);
    const std::string what = change;
    if (what == "shape")
      (*node->mutable_op_attr())["shape"].mutable_int32_vec_value()->set_value(2, 9);
    else if (what == "data_type")
      (*node->mutable_op_attr())["data_type"].set_string_value("float32");
    else
      node->mutable_args(0)->mutable_arg_ops()->RemoveLast();
    const std::string foreign = deterministic(file);
    const Graph read = parse_xmodel(foreign, "foreign.xmodel");
    const Op& norm = read.op("norm");
    ASSERT_EQ(norm.args.size(), 1u);
    EXPECT_EQ(norm.args[0].name, "input");
    EXPECT_TRUE(norm.attrs.contains("shape"));
    EXPECT_TRUE(norm.attrs.contains("data_type"));
    EXPECT_EQ(serialize_xmodel(read), foreign);
  }
}

TEST(XmodelAutomaticForm, RefusesALayernormWithoutItsOperandsInOneLine) {
  Graph no_beta = layernorm_graph();
  std::erase_if(no_beta.find("norm")->args, [](const OpArg& a) { return a.name == "beta"; });
  const std::string missing = error_of(no_beta);
  EXPECT_NE(missing.find("op 'norm' (layernorm): arg 'beta' needs exactly one producer, has 0"),
            std::string::npos)
      << missing;

  Graph two_inputs = layernorm_graph();
  two_inputs.find("norm")->args.front().producers.push_back("gamma_fix");
  EXPECT_NE(error_of(two_inputs).find("arg 'input' needs exactly one producer, has 2"),
            std::string::npos);

  Graph extra = layernorm_graph();
  extra.find("norm")->args.push_back(OpArg{"scale", {"gamma_fix"}});
  EXPECT_NE(error_of(extra).find("arg 'scale' has no place"), std::string::npos);

  Graph reserved = layernorm_graph();
  reserved.find("norm")->attrs["shape"] = std::vector<std::int32_t>{1, 5, 8};
  const std::string what = error_of(reserved);
  EXPECT_NE(what.find("attribute 'shape' is the file's"), std::string::npos) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos);
}

// Every graph dpushard makes with a layernorm: read back equal, rewritten identical.
TEST(XmodelAutomaticForm, ConvVitAndMicroModelsRoundTrip) {
  ZooSpec spec;
  spec.params = 1'000'000;
  spec.experts = 2;
  spec.input = {32, 32, 3};
  spec.classes = 10;
  spec.attention = ConvVitAttention::Softmax;  // the variant with layernorms
  std::vector<Graph> graphs{make_convvit(spec)};
  for (const MicroModelInfo& info : micro_models()) graphs.push_back(make_micro_model(info.name));
  int layernorms = 0;
  for (const Graph& g : graphs) {
    SCOPED_TRACE(g.name());
    for (const Op& op : g.ops()) layernorms += op.type == "layernorm";
    const std::string bytes = serialize_xmodel(g);
    const Graph again = parse_xmodel(bytes, "memory");
    EXPECT_TRUE(again == g);
    EXPECT_EQ(serialize_xmodel(again), bytes);
  }
  EXPECT_GE(layernorms, 3);
}

}  // namespace
}  // namespace dpushard
