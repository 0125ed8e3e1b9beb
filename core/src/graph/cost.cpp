#include "dpushard/graph/cost.hpp"

namespace dpushard {
namespace {

// "conv2d-fix" -> "conv2d": compiled ops cost the same as their float-domain originals.
std::string_view base_type(std::string_view type) {
  if (type.size() > 4 && type.substr(type.size() - 4) == "-fix") type.remove_suffix(4);
  return type;
}

bool is_weight_producer(const Graph& graph, const Op& producer) {
  if (producer.type == "const-fix") return true;
  if (producer.type != "fix") return false;
  const auto& in = producer.producers("input");
  if (in.empty()) return false;
  const Op* source = graph.find(in.front());
  return source != nullptr && source->type == "const";
}

bool owns_weights(std::string_view type) {
  return type == "conv2d" || type == "depthwise-conv2d" || type == "matmul" ||
         type == "inner-product" || type == "layernorm" || type == "add" || type == "mul" ||
         type == "eltwise" || type == "transposed-conv2d";
}

std::int64_t shape_at(const std::vector<std::int64_t>& s, std::size_t from_end) {
  return s.size() > from_end ? s[s.size() - 1 - from_end] : 1;
}

}  // namespace

OpCost op_cost(const Graph& graph, const Op& op) {
  OpCost cost;
  const std::string_view type = base_type(op.type);
  const std::int64_t out_elems = op.output.element_count();

  if (owns_weights(type)) {
    for (const auto& name : op.all_producers()) {
      const Op* p = graph.find(name);
      if (p != nullptr && is_weight_producer(graph, *p)) cost.params += p->output.element_count();
    }
    cost.weight_bytes = cost.params;  // int8
  }

  if (type == "conv2d" || type == "depthwise-conv2d" || type == "transposed-conv2d") {
    const auto& w = op.producers("weights");
    const Op* weights = w.empty() ? nullptr : graph.find(w.front());
    if (weights != nullptr && weights->output.shape.size() == 4) {
      const auto& ws = weights->output.shape;
      // conv: every output element sums KH*KW*IC/group products; depthwise: KH*KW.
      cost.macs = out_elems * ws[1] * ws[2] * (type == "depthwise-conv2d" ? 1 : ws[3]);
    }
  } else if (type == "matmul") {
    const auto& in = op.producers("input");
    const Op* a = in.empty() ? nullptr : graph.find(in.front());
    if (a != nullptr) {
      const bool ta = bool_attr(op.attrs, "transpose_a", false);
      const std::int64_t k = ta ? shape_at(a->output.shape, 1) : shape_at(a->output.shape, 0);
      cost.macs = out_elems * k;
    }
  } else if (type == "inner-product") {
    const auto& w = op.producers("weights");
    const Op* weights = w.empty() ? nullptr : graph.find(w.front());
    if (weights != nullptr && weights->output.shape.size() == 2)
      cost.macs = out_elems * weights->output.shape[1];
  }

  const bool is_activation_fix = (op.type == "fix" && !is_weight_producer(graph, op)) ||
                                 (op.type.ends_with("-fix") &&
                                  op.output.data_type == DataType::XInt && op.type != "const-fix");
  if (is_activation_fix) {
    // `_int` files type fix outputs float32, but the DPU moves them as int8 (bit_width).
    const std::int64_t bits =
        op.type == "fix" ? int_attr(op.attrs, "bit_width", 8) : op.output.bit_width;
    cost.activation_bytes = out_elems * ((bits + 7) / 8);
  }
  return cost;
}

GraphCost graph_cost(const Graph& graph) {
  GraphCost total;
  for (const Op& op : graph.ops()) {
    const OpCost c = op_cost(graph, op);
    total.params += c.params;
    total.macs += c.macs;
    total.weight_bytes += c.weight_bytes;
    total.activation_bytes += c.activation_bytes;
    ++total.ops_by_type[op.type];
  }
  return total;
}

}  // namespace dpushard
