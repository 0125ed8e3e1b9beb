#include "graph_codec.hpp"

#include <limits>
#include <utility>

#include "attr_codec.hpp"
#include "automatic_form.hpp"

namespace dpushard::xmodel {
namespace {

DataType data_type_from_proto(std::int32_t code, const std::string& owner) {
  if (code < static_cast<std::int32_t>(DataType::Int) ||
      code > static_cast<std::int32_t>(DataType::Unknown))
    throw Error(owner + ": output tensor has an unknown data_type " + std::to_string(code));
  return static_cast<DataType>(code);
}

TensorDesc tensor_from_proto(xmodel::pb::Tensor& proto, const std::string& owner) {
  TensorDesc tensor;
  tensor.name = std::move(*proto.mutable_tensor_name());
  tensor.shape.assign(proto.tensor_dim().begin(), proto.tensor_dim().end());
  tensor.data_type = data_type_from_proto(proto.data_type(), owner);
  tensor.bit_width = proto.tensor_bit_width();
  tensor.attrs = attrs_from_proto(*proto.mutable_tensor_attr(), owner + " tensor");
  return tensor;
}

void tensor_to_proto(const TensorDesc& tensor, const std::string& owner,
                     xmodel::pb::Tensor& proto) {
  proto.set_tensor_name(tensor.name);
  for (std::int64_t dim : tensor.shape) {
    // The schema stores dims as uint32; a negative or huge dim cannot be written.
    if (dim < 0 || dim > std::numeric_limits<std::uint32_t>::max())
      throw Error(owner + ": output tensor dim " + std::to_string(dim) +
                  " does not fit the file's uint32 dims");
    proto.add_tensor_dim(static_cast<std::uint32_t>(dim));
  }
  proto.set_data_type(static_cast<std::int32_t>(tensor.data_type));
  proto.set_tensor_bit_width(tensor.bit_width);
  attrs_to_proto(tensor.attrs, *proto.mutable_tensor_attr());
}

xmodel::pb::OPNode op_to_proto_as_is(const Op& op) {
  xmodel::pb::OPNode node;
  node.set_op_name(op.name);
  node.set_op_type(op.type);
  attrs_to_proto(op.attrs, *node.mutable_op_attr());
  for (const auto& arg : op.args) {
    auto* out = node.add_args();
    out->set_arg_name(arg.name);
    for (const auto& producer : arg.producers) out->add_arg_ops(producer);
  }
  tensor_to_proto(op.output, "op '" + op.name + "'", *node.mutable_output_tensor());
  return node;
}

}  // namespace

Op op_from_proto(xmodel::pb::OPNode& node) {
  Op op;
  op.name = std::move(*node.mutable_op_name());
  op.type = std::move(*node.mutable_op_type());
  const std::string owner = "op '" + op.name + "'";
  op.attrs = attrs_from_proto(*node.mutable_op_attr(), owner);
  op.args.reserve(static_cast<std::size_t>(node.args_size()));
  for (auto& arg : *node.mutable_args()) {
    op.args.push_back(OpArg{std::move(*arg.mutable_arg_name()),
                            std::vector<std::string>(arg.arg_ops().begin(), arg.arg_ops().end())});
  }
  op.output = tensor_from_proto(*node.mutable_output_tensor(), owner);
  from_automatic_form(op);  // an op type XIR does not define: its named operands back
  return op;
}

xmodel::pb::OPNode op_to_proto(const Op& op) {
  // An op type XIR does not define goes into the file in the form XIR defines for it.
  if (Op file_form; to_automatic_form(op, file_form)) return op_to_proto_as_is(file_form);
  return op_to_proto_as_is(op);
}

Subgraph subgraph_from_proto(xmodel::pb::SubGraph& proto) {
  Subgraph subgraph;
  subgraph.name = std::move(*proto.mutable_subgraph_name());
  subgraph.ops.assign(proto.op_name().begin(), proto.op_name().end());
  subgraph.attrs = attrs_from_proto(*proto.mutable_subg_attr(), "subgraph '" + subgraph.name + "'");
  subgraph.children.reserve(static_cast<std::size_t>(proto.subg_child_size()));
  for (auto& child : *proto.mutable_subg_child())
    subgraph.children.push_back(subgraph_from_proto(child));
  return subgraph;
}

void subgraph_to_proto(const Subgraph& subgraph, xmodel::pb::SubGraph& proto) {
  proto.set_subgraph_name(subgraph.name);
  for (const auto& op : subgraph.ops) proto.add_op_name(op);
  attrs_to_proto(subgraph.attrs, *proto.mutable_subg_attr());
  for (const auto& child : subgraph.children) subgraph_to_proto(child, *proto.add_subg_child());
}

}  // namespace dpushard::xmodel
