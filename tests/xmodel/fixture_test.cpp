// The three real xmodels read into exactly the facts listed in
// ../shared/fixtures/xmodel/SOURCES.md (and checked there with protoc --decode_raw).

#include <gtest/gtest.h>

#include <map>

#include "dpushard/xmodel/xmodel.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::fixture;
using OpCounts = std::map<std::string, int>;

OpCounts count_ops(const Graph& graph) {
  OpCounts counts;
  for (const Op& op : graph.ops()) ++counts[op.type];
  return counts;
}

const Subgraph& child_on(const Subgraph& root, const std::string& device) {
  for (const Subgraph& child : root.children)
    if (child.device() == device) return child;
  throw std::runtime_error("no child subgraph on " + device);
}

std::vector<std::string> child_devices(const Subgraph& root) {
  std::vector<std::string> devices;
  for (const Subgraph& child : root.children) devices.push_back(child.device());
  return devices;
}

TEST(XmodelFixture, ResNet20IntHasTheQuantizersOps) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph graph = read_xmodel(fixture(testing::kResNetInt));
  EXPECT_EQ(graph.name(), "CifarResNet");
  EXPECT_EQ(count_ops(graph), (OpCounts{{"const", 47},
                                        {"fix", 77},
                                        {"conv2d", 21},
                                        {"relu", 19},
                                        {"add", 9},
                                        {"avgpool2d", 1},
                                        {"mul", 1},
                                        {"reshape", 1},
                                        {"matmul", 1},
                                        {"stack", 1},
                                        {"data", 1}}));
  EXPECT_FALSE(is_compiled(graph));
  // The quantizer writes a plain root (all ops, no children): nothing to keep.
  EXPECT_FALSE(graph.root().has_value());
  EXPECT_TRUE(graph.attrs().empty());
  EXPECT_EQ(graph.op_defs().size(), 106u);

  const auto inputs = graph.inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]->name, "CifarResNet__input_0");
  EXPECT_EQ(inputs[0]->output.shape, (std::vector<std::int64_t>{1, 32, 32, 3}));
  EXPECT_EQ(inputs[0]->output.data_type, DataType::Float);
  EXPECT_EQ(inputs[0]->output.bit_width, 32);
  EXPECT_EQ(ints_attr(inputs[0]->attrs, "shape", "data"),
            (std::vector<std::int64_t>{1, 32, 32, 3}));
}

TEST(XmodelFixture, ResNet20IntAttributesKeepTheirKinds) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph graph = read_xmodel(fixture(testing::kResNetInt));
  const Op& fix = graph.op("CifarResNet__input_0_fix");
  EXPECT_EQ(fix.type, "fix");
  EXPECT_NE(find_attr<std::int32_t>(fix.attrs, "fix_point"), nullptr);
  EXPECT_EQ(get_attr<std::int32_t>(fix.attrs, "bit_width", fix.name), 8);
  EXPECT_TRUE(get_attr<bool>(fix.attrs, "if_signed", fix.name));
  // Every fix in this file, weights and input included, says DPU_ROUND.
  EXPECT_EQ(get_attr<std::string>(fix.attrs, "round_mode", fix.name), "DPU_ROUND");
  EXPECT_EQ(fix.producers("input"), (std::vector<std::string>{"CifarResNet__input_0"}));

  int consts = 0;
  for (const Op& op : graph.ops()) {
    if (op.type != "const") continue;
    ++consts;
    const auto& data = get_attr<Bytes>(op.attrs, "data", op.name).data;
    EXPECT_EQ(static_cast<std::int64_t>(data.size()), op.output.element_count() * 4) << op.name;
  }
  EXPECT_EQ(consts, 47);

  // stack's output tensor carries a tensor attribute with a -1 entry.
  const Op& stack = graph.op("CifarResNet__CifarResNet_ret_89_shape_i0");
  EXPECT_EQ(get_attr<std::vector<std::int32_t>>(stack.output.attrs, "shape_info", stack.name),
            (std::vector<std::int32_t>{1, -1}));
}

TEST(XmodelFixture, ResNet20Vck190IsCompiledWithOneDpuSubgraph) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph graph = read_xmodel(fixture(testing::kResNetVck190));
  EXPECT_TRUE(is_compiled(graph));
  EXPECT_EQ(graph.size(), 81u);
  EXPECT_EQ(graph.op_defs().size(), 106u);

  const auto inputs = graph.inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]->type, "data-fix");
  EXPECT_EQ(inputs[0]->name, "CifarResNet__input_0");
  EXPECT_EQ(inputs[0]->output.shape, (std::vector<std::int64_t>{1, 32, 32, 3}));
  EXPECT_EQ(inputs[0]->output.data_type, DataType::XInt);
  EXPECT_EQ(inputs[0]->output.bit_width, 8);
  EXPECT_TRUE(fix_point_of(graph, inputs[0]->name).has_value());

  ASSERT_TRUE(graph.root().has_value());
  const Subgraph& root = *graph.root();
  EXPECT_EQ(root.name, "root");
  EXPECT_EQ(child_devices(root), (std::vector<std::string>{"USER", "DPU", "CPU"}));
  const Subgraph& dpu = child_on(root, "DPU");
  EXPECT_EQ(dpu.children.size(), 26u);
  EXPECT_EQ(get_attr<std::uint64_t>(dpu.attrs, "workload", dpu.name), 82007306u);
  EXPECT_NE(find_attr<Bytes>(dpu.attrs, "mc_code"), nullptr);
  EXPECT_NE(find_attr<std::uint64_t>(dpu.attrs, "dpu_fingerprint"), nullptr);
  EXPECT_NE(find_attr<StringMap<std::string>>(dpu.attrs, "runner"), nullptr);
  EXPECT_NE(find_attr<StringMap<Bytes>>(dpu.attrs, "reg_id_to_parameter_value"), nullptr);
  EXPECT_NE(child_on(root, "CPU").name.find("fc"), std::string::npos);

  // The compiler records the md5 of the _int file it compiled (SOURCES.md).
  const auto& md5 = get_attr<StringMap<std::string>>(graph.attrs(), "files_md5sum", "graph");
  ASSERT_EQ(md5.size(), 1u);
  EXPECT_EQ(md5.begin()->second, "f413479a86c66e62d8e57c14533ad694");
}

TEST(XmodelFixture, MobileNetV2Kv260IsCompiledForTheKria) {
  DPUSHARD_REQUIRE_FIXTURES();
  const Graph graph = read_xmodel(fixture(testing::kMobileNetKv260));
  EXPECT_TRUE(is_compiled(graph));
  EXPECT_EQ(count_ops(graph), (OpCounts{{"const-fix", 106},
                                        {"conv2d-fix", 36},
                                        {"depthwise-conv2d-fix", 17},
                                        {"eltwise-fix", 10},
                                        {"pool-fix", 1},
                                        {"reshape-fix", 1},
                                        {"data-fix", 1},
                                        {"upload", 1},
                                        {"download", 1},
                                        {"fix2float", 1}}));

  const auto inputs = graph.inputs();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]->type, "data-fix");
  EXPECT_EQ(inputs[0]->output.shape, (std::vector<std::int64_t>{1, 224, 224, 3}));

  ASSERT_TRUE(graph.root().has_value());
  const Subgraph& root = *graph.root();
  EXPECT_EQ(child_devices(root), (std::vector<std::string>{"USER", "DPU", "CPU"}));
  const Subgraph& dpu = child_on(root, "DPU");
  EXPECT_EQ(dpu.children.size(), 39u);
  EXPECT_EQ(get_attr<std::uint64_t>(dpu.attrs, "workload", dpu.name), 606167266u);
  EXPECT_NE(child_on(root, "CPU").name.find("classifier"), std::string::npos);
  EXPECT_EQ(child_on(root, "USER").ops, (std::vector<std::string>{inputs[0]->name}));
}

}  // namespace
}  // namespace dpushard
