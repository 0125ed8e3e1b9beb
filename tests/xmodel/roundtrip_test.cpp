// read -> write -> read gives the same graph, for the real files and for graphs built in
// code with every attribute kind; the writer is deterministic and atomic.

#include <gtest/gtest.h>

#include <limits>

#include "dpushard/graph/builder.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::fixture;
using testing::ScratchDir;

std::vector<std::int8_t> ramp(std::size_t n) {
  std::vector<std::int8_t> q(n);
  for (std::size_t i = 0; i < n; ++i)
    q[i] = static_cast<std::int8_t>(static_cast<int>(i * 37 % 255) - 127);
  return q;
}

Graph small_cnn() {
  GraphBuilder b("small_cnn");
  const Value x = b.input("input", {1, 8, 8, 3}, 4);
  const Value w = b.constant("conv_w", {4, 3, 3, 3}, ramp(108), 6);
  const Value bias = b.constant("conv_b", {4}, ramp(4), 5);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::Relu;
  const Value c = b.conv2d("conv", x, w, bias, spec, 3);
  const Value p = b.maxpool2d("pool", c, Pool2dSpec{});
  const Value r = b.reshape("flat", p, {1, 64});
  const Value fw = b.constant("fc_w", {10, 64}, ramp(640), 7);
  b.matmul("fc", r, fw, std::nullopt, true, 2);
  return b.finish();
}

// One attribute of each of the 29 kinds, with edge values.
AttrMap every_kind() {
  AttrMap a;
  a["bool"] = true;
  a["int32"] = std::int32_t{-7};
  a["uint32"] = std::numeric_limits<std::uint32_t>::max();
  a["int64"] = std::numeric_limits<std::int64_t>::min();
  a["uint64"] = std::numeric_limits<std::uint64_t>::max();
  a["float"] = 1.5e-30f;
  a["double"] = -std::numeric_limits<double>::infinity();
  a["string"] = std::string("DPU_ROUND");
  a["bytes"] = Bytes{std::string("\0\xff\x01", 3)};
  a["bool_vec"] = std::vector<bool>{true, false, true};
  a["int32_vec"] = std::vector<std::int32_t>{1, -1, 0};
  a["uint32_vec"] = std::vector<std::uint32_t>{};
  a["int64_vec"] = std::vector<std::int64_t>{-5, 1LL << 40};
  a["uint64_vec"] = std::vector<std::uint64_t>{0, ~0ULL};
  a["float_vec"] = std::vector<float>{0.25f, -2.0f};
  a["double_vec"] = std::vector<double>{1e300};
  a["string_vec"] = std::vector<std::string>{"a", "", "c"};
  a["bytes_vec"] = std::vector<Bytes>{Bytes{"x"}, Bytes{std::string(1, '\0')}};
  a["map_int32"] = StringMap<std::int32_t>{{"REG_0", 272768}, {"REG_1", -1}};
  a["map_uint32"] = StringMap<std::uint32_t>{{"k", 3u}};
  a["map_int64"] = StringMap<std::int64_t>{{"k", -3}};
  a["map_uint64"] = StringMap<std::uint64_t>{};
  a["map_string"] = StringMap<std::string>{{"run", "libvart-dpu-runner.so"}};
  a["map_bytes"] = StringMap<Bytes>{{"REG_0", Bytes{std::string("\x16\0(", 3)}}};
  a["map_int32_vec"] = StringMap<std::vector<std::int32_t>>{{"k", {1, 2}}, {"e", {}}};
  a["map_uint32_vec"] = StringMap<std::vector<std::uint32_t>>{{"k", {7u}}};
  a["map_int64_vec"] = StringMap<std::vector<std::int64_t>>{{"k", {-9}}};
  a["map_uint64_vec"] = StringMap<std::vector<std::uint64_t>>{{"k", {9u}}};
  a["map_string_vec"] = StringMap<std::vector<std::string>>{{"k", {"x", "y"}}};
  return a;
}

// A compiled-looking graph: every attribute kind on the graph, an op and a tensor, and a
// subgraph tree whose leaves hold every op once.
Graph graph_with_every_kind() {
  Graph g("kinds");
  Op data;
  data.name = "in";
  data.type = "data-fix";
  data.attrs = every_kind();
  data.output = TensorDesc{"in", {1, 4, 4, 8}, DataType::XInt, 8, {{"fix_point", std::int32_t{6}}}};
  g.add_op(data);
  Op up;
  up.name = "up";
  up.type = "upload";
  up.args = {OpArg{"input", {"in"}}};
  up.output = TensorDesc{"up", {1, 4, 4, 8}, DataType::XInt, 8, every_kind()};
  g.add_op(up);
  g.attrs() = every_kind();
  Subgraph user{"subgraph_in", {"in"}, {{"device", std::string("USER")}}, {}};
  Subgraph leaf{"subgraph_up", {"up"}, {}, {}};
  Subgraph dpu{"subgraph_dpu", {}, every_kind(), {leaf}};
  dpu.attrs["device"] = std::string("DPU");
  g.root() = Subgraph{"root", {}, {{"workload", std::uint64_t{42}}}, {user, dpu}};
  g.op_defs() = {std::string("\n\x06upload", 8), std::string()};
  return g;
}

void expect_same_const_data(const Graph& a, const Graph& b) {
  int consts = 0;
  for (const Op& op : a.ops()) {
    const Bytes* data = find_attr<Bytes>(op.attrs, "data");
    if (op.type != "const" || data == nullptr) continue;
    ++consts;
    const Op* other = b.find(op.name);
    ASSERT_NE(other, nullptr) << op.name;
    const Bytes* other_data = find_attr<Bytes>(other->attrs, "data");
    ASSERT_NE(other_data, nullptr) << op.name;
    EXPECT_TRUE(data->data == other_data->data) << op.name;
  }
  EXPECT_GT(consts, 0);
}

TEST(XmodelRoundTrip, IntFixtureGivesAnEqualGraphAndIdenticalWeights) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph original = read_xmodel(fixture(testing::kResNetInt));
  const std::string bytes = serialize_xmodel(original);
  const Graph again = parse_xmodel(bytes, "memory");
  EXPECT_TRUE(again == original);
  expect_same_const_data(original, again);
  EXPECT_EQ(again.op_defs(), original.op_defs());
  // Deterministic, and a fixed point after the first write.
  EXPECT_EQ(serialize_xmodel(original), bytes);
  EXPECT_EQ(serialize_xmodel(again), bytes);
}

TEST(XmodelRoundTrip, IntFixtureThroughAFile) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  const Graph original = read_xmodel(fixture(testing::kResNetInt));
  const auto path = dir / "copy_int.xmodel";
  write_xmodel(original, path);
  const Graph again = read_xmodel(path);
  EXPECT_TRUE(again == original);
  expect_same_const_data(original, again);
  // Only the file itself: the temporary was renamed into place.
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "copy_int.xmodel");
  }
  EXPECT_EQ(entries, 1);
  // Overwriting in place works and gives the same bytes.
  write_xmodel(again, path);
  EXPECT_EQ(testing::read_bytes(path), serialize_xmodel(original));
}

class CompiledRoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(CompiledRoundTrip, SubgraphTreeAndAttributesSurvive) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph original = read_xmodel(fixture(GetParam()));
  const Graph again = parse_xmodel(serialize_xmodel(original), "memory");
  EXPECT_TRUE(again == original);
  ASSERT_TRUE(again.root().has_value());
  EXPECT_EQ(*again.root(), *original.root());
  EXPECT_EQ(again.attrs(), original.attrs());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CompiledRoundTrip,
                         ::testing::Values(testing::kResNetVck190, testing::kMobileNetKv260));

TEST(XmodelRoundTrip, GraphBuiltInCode) {
  ScratchDir dir;
  const Graph built = small_cnn();
  write_xmodel(built, dir / "small_int.xmodel");
  const Graph again = read_xmodel(dir / "small_int.xmodel");
  EXPECT_TRUE(again == built);
  EXPECT_FALSE(again.root().has_value());
  expect_same_const_data(built, again);
  EXPECT_EQ(again.op("conv").output.shape, (std::vector<std::int64_t>{1, 8, 8, 4}));
}

TEST(XmodelRoundTrip, EveryAttributeKindAndASubgraphTree) {
  const Graph built = graph_with_every_kind();
  const Graph again = parse_xmodel(serialize_xmodel(built), "memory");
  EXPECT_TRUE(again == built);
  EXPECT_EQ(again.attrs(), every_kind());
  for (const auto& [key, value] : again.op("in").attrs)
    EXPECT_EQ(value.index(), every_kind().at(key).index()) << key;
  EXPECT_EQ(again.op("up").output.attrs, every_kind());
  ASSERT_TRUE(again.root().has_value());
  EXPECT_EQ(again.root()->children.at(1).device(), "DPU");
  EXPECT_EQ(again.op_defs(), built.op_defs());
}

TEST(XmodelRoundTrip, RootOfAnUncompiledGraphIsKeptWhenItSaysMore) {
  Graph built = small_cnn();
  Subgraph root{"root", {}, {}, {}};
  for (const Op& op : built.ops()) root.ops.push_back(op.name);
  root.attrs["note"] = std::string("kept");
  built.root() = root;
  const Graph again = parse_xmodel(serialize_xmodel(built), "memory");
  EXPECT_TRUE(again == built);
}

TEST(XmodelWrite, FailuresNameTheFileAndLeaveNoTemporary) {
  ScratchDir dir;
  const Graph graph = small_cnn();
  const auto missing_dir = dir / "no_such_dir" / "m.xmodel";
  try {
    write_xmodel(graph, missing_dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(missing_dir.string()), std::string::npos) << e.what();
  }
  const auto sub = dir / "a_dir";
  std::filesystem::create_directory(sub);
  EXPECT_THROW(write_xmodel(graph, sub), Error);
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path()))
    ++entries;
  EXPECT_EQ(entries, 1);  // a_dir only
}

TEST(XmodelWrite, RefusesGraphsItCouldNotReadBack) {
  ScratchDir dir;
  const auto path = dir / "m.xmodel";
  const Graph good = small_cnn();
  write_xmodel(good, path);

  Graph dangling = small_cnn();
  dangling.mutable_ops().back().args.front().producers = {"nowhere"};
  try {
    write_xmodel(dangling, path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find("nowhere"), std::string::npos) << what;
  }
  // The earlier file is untouched.
  EXPECT_TRUE(read_xmodel(path) == good);

  Graph partial_tree = graph_with_every_kind();
  partial_tree.root()->children.pop_back();  // "up" is in no subgraph now
  EXPECT_THROW(serialize_xmodel(partial_tree), Error);

  Graph negative = small_cnn();
  negative.mutable_ops().front().output.shape = {1, -1};
  EXPECT_THROW(serialize_xmodel(negative), Error);

  EXPECT_THROW(serialize_xmodel(Graph("empty")), Error);
}

}  // namespace
}  // namespace dpushard
