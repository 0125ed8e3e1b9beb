// Entry points: read the ModelProto, check the opset, collect inputs and initializers,
// fuse decomposed patterns, then convert node by node.
#include "dpushard/onnx/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "const_fold.hpp"
#include "converter.hpp"
#include "dpushard/base/error.hpp"
#include "patterns.hpp"

namespace dpushard {
namespace {

using onnximport::ConstTensor;
using onnximport::Node;

constexpr std::int64_t kMinOpset = 11;
constexpr std::int64_t kMaxOpset = 17;

std::int64_t default_opset(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  throw Error("no opset for the default ONNX domain");
}

std::vector<std::int64_t> input_shape(const onnx::ValueInfoProto& in) {
  if (!in.type().has_tensor_type()) throw Error("input '" + in.name() + "' is not a tensor");
  const auto& tt = in.type().tensor_type();
  if (tt.elem_type() != onnx::TensorProto::FLOAT)
    throw Error("input '" + in.name() + "' has element type " + std::to_string(tt.elem_type()) +
                ", only float32 inputs are supported");
  std::vector<std::int64_t> shape;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() > 0) {
      shape.push_back(d.dim_value());
    } else if (i == 0) {
      shape.push_back(1);  // dynamic batch: one frame at a time
    } else {
      throw Error("input '" + in.name() + "' has a dynamic dimension " + std::to_string(i) +
                  "; export with a fixed input size");
    }
  }
  return shape;
}

OnnxImport convert(const onnx::ModelProto& model, const std::string& fallback_name) {
  const std::int64_t opset = default_opset(model);
  if (opset < kMinOpset || opset > kMaxOpset)
    throw Error("opset " + std::to_string(opset) + " is not supported (" +
                std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
  const onnx::GraphProto& g = model.graph();

  std::map<std::string, ConstTensor> constants;
  for (const auto& init : g.initializer())
    constants[init.name()] =
        onnximport::from_tensor_proto(init, "initializer '" + init.name() + "'");
  std::vector<Node> nodes;
  for (const auto& proto : g.node()) {
    Node n = onnximport::node_from_proto(proto);
    if (n.type == "Constant" && n.outputs.size() == 1)
      constants[n.outputs[0]] = onnximport::fold_node(n, {}, opset).at(0);
    nodes.push_back(std::move(n));
  }
  std::set<std::string> outputs;
  std::vector<std::string> output_names;
  for (const auto& o : g.output()) {
    outputs.insert(o.name());
    output_names.push_back(o.name());
  }
  const std::int64_t node_count = static_cast<std::int64_t>(nodes.size());
  nodes = onnximport::fuse_patterns(
      std::move(nodes),
      [&](const std::string& name) -> const ConstTensor* {
        auto it = constants.find(name);
        return it == constants.end() ? nullptr : &it->second;
      },
      outputs);

  onnximport::Converter conv(g.name().empty() ? fallback_name : g.name(), opset, std::move(nodes));
  conv.set_graph_outputs(outputs);
  for (const auto& init : g.initializer())
    conv.add_constant(init.name(), constants.at(init.name()));
  for (const auto& in : g.input())
    if (!constants.count(in.name())) conv.add_input(in.name(), input_shape(in));
  conv.run();
  OnnxImport out = conv.finish(output_names);
  out.onnx_nodes = node_count;
  return out;
}

}  // namespace

OnnxImport import_onnx_bytes(const std::string& bytes, const std::string& origin) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw Error(origin + ": not an ONNX model (protobuf parse failed)");
  if (!model.has_graph()) throw Error(origin + ": ONNX model without a graph");
  try {
    std::string stem = origin;
    if (auto slash = stem.find_last_of('/'); slash != std::string::npos)
      stem = stem.substr(slash + 1);
    if (auto dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
    return convert(model, stem);
  } catch (const Error& e) {
    throw Error(origin + ": " + e.what());
  }
}

OnnxImport import_onnx(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) throw Error(path.string() + ": read failed");
  return import_onnx_bytes(bytes.str(), path.string());
}

std::vector<std::string> supported_onnx_ops() {
  // The converter's own table: what it maps when the inputs are activations. Constant
  // subgraphs are folded before it runs (is_foldable_type), decomposed LayerNorm and Gelu
  // are fused first (fuse_patterns); neither needs a handler.
  std::vector<std::string> ops;
  for (const auto& [type, handler] : onnximport::Converter::handlers()) ops.push_back(type);
  return ops;
}

}  // namespace dpushard
