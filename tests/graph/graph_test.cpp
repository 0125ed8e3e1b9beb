#include <gtest/gtest.h>

#include "dpushard/graph/graph.hpp"

namespace dpushard {
namespace {

Op simple(const std::string& name, const std::string& type, std::vector<std::string> inputs) {
  Op op;
  op.name = name;
  op.type = type;
  if (!inputs.empty()) op.args.push_back({"input", std::move(inputs)});
  op.output.name = name;
  return op;
}

TEST(Graph, RejectsDuplicateNames) {
  Graph g("g");
  g.add_op(simple("a", "data", {}));
  EXPECT_THROW(g.add_op(simple("a", "relu", {})), Error);
}

TEST(Graph, TopologicalOrderIsStableAndRespectsProducers) {
  Graph g("g");
  g.add_op(simple("c", "add", {"a", "b"}));
  g.add_op(simple("b", "relu", {"a"}));
  g.add_op(simple("a", "data", {}));
  g.add_op(simple("d", "data", {}));
  const auto order = g.topological_order();
  std::vector<std::string> names;
  for (auto i : order) names.push_back(g.ops()[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c", "d"}));
}

TEST(Graph, CycleIsAnErrorNamingAnOp) {
  Graph g("g");
  g.add_op(simple("a", "relu", {"b"}));
  g.add_op(simple("b", "relu", {"a"}));
  try {
    g.topological_order();
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
}

TEST(Graph, MissingProducerIsNamed) {
  Graph g("g");
  g.add_op(simple("a", "relu", {"ghost"}));
  try {
    g.topological_order();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ghost"), std::string::npos) << e.what();
  }
}

TEST(Graph, InputsOutputsAndConsumers) {
  Graph g("g");
  g.add_op(simple("x", "data", {}));
  g.add_op(simple("w", "const", {}));
  g.add_op(simple("y", "add", {"x", "w"}));
  g.add_op(simple("z", "relu", {"y"}));
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name, "x");
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name, "z");
  ASSERT_EQ(g.consumers("y").size(), 1u);
  EXPECT_EQ(g.consumers("y")[0]->name, "z");
  g.remove_op("z");
  EXPECT_EQ(g.find("z"), nullptr);
  EXPECT_EQ(g.outputs()[0]->name, "y");
}

TEST(Graph, FixPointWalksThroughLayoutOps) {
  Graph g("g");
  g.add_op(simple("x", "data", {}));
  Op fix = simple("x_fix", "fix", {"x"});
  fix.attrs["fix_point"] = std::int32_t{5};
  g.add_op(fix);
  g.add_op(simple("r", "reshape", {"x_fix"}));
  g.add_op(simple("t", "transpose", {"r"}));
  g.add_op(simple("y", "relu", {"t"}));
  EXPECT_EQ(fix_point_of(g, "x_fix"), 5);
  EXPECT_EQ(fix_point_of(g, "t"), 5);
  EXPECT_EQ(fix_point_of(g, "y"), std::nullopt);
  EXPECT_EQ(fix_point_of(g, "x"), std::nullopt);
}

TEST(Graph, CompiledTensorAttributeGivesFixPoint) {
  Graph g("g");
  Op op = simple("c", "conv2d-fix", {});
  op.output.attrs["fix_point"] = std::int32_t{-2};
  g.add_op(op);
  EXPECT_EQ(fix_point_of(g, "c"), -2);
  EXPECT_TRUE(is_compiled(g));
}

TEST(Attr, TypedAccessAndKindErrors) {
  AttrMap attrs = {{"k", std::vector<std::int32_t>{3, 1}},
                   {"n", std::uint64_t{7}},
                   {"s", std::string("x")},
                   {"f", 0.5f}};
  EXPECT_EQ(ints_attr(attrs, "k", "op"), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(int_attr(attrs, "n", 0), 7);
  EXPECT_EQ(int_attr(attrs, "missing", -4), -4);
  EXPECT_DOUBLE_EQ(float_attr(attrs, "f", 0), 0.5);
  EXPECT_EQ(string_attr(attrs, "s", ""), "x");
  EXPECT_THROW(ints_attr(attrs, "s", "op"), Error);
  EXPECT_THROW((get_attr<std::string>(attrs, "k", "op")), Error);
  EXPECT_EQ(attr_kind_name(attrs.at("k")), "int32_vec");
}

TEST(Const, ValuesRoundTripAsFloat32Bytes) {
  Op op = simple("w", "const", {});
  set_const_values(op, {1.5f, -0.25f});
  EXPECT_EQ(const_values(op), (std::vector<float>{1.5f, -0.25f}));
  op.attrs["data"] = Bytes{"abc"};
  EXPECT_THROW(const_values(op), Error);
}

}  // namespace
}  // namespace dpushard
