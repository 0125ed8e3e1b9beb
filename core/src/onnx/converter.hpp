#pragma once
// Maps ONNX nodes (NCHW, PyTorch semantics) onto the float IR graph (NHWC, docs/ir.md).
//
// Every activation carries its ONNX shape and a layout: IR axis i holds ONNX axis
// perm[i]. Convolutions put their outputs in NHWC; ONNX Transposes only relabel the
// layout; an op that needs a particular layout (a reshape, a matmul, a layernorm over
// the last axis) gets an IR transpose first, unless the move is a no-op in memory.
// Constants stay in ONNX layout until an op consumes them.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "const_tensor.hpp"
#include "dpushard/onnx/onnx_import.hpp"
#include "ir_writer.hpp"
#include "node.hpp"

namespace dpushard::onnximport {

using Perm = std::vector<std::int64_t>;

struct Act {
  std::string op;  // IR op producing the value
  Shape shape;     // ONNX shape
  Perm perm;       // IR axis i = ONNX axis perm[i]
  // Set by a Flatten over an NCHW map that feeds only fully connected layers: IR element
  // j of the last axis is ONNX element row_order[j]; the consumer permutes its weights.
  std::vector<std::int64_t> row_order;

  Shape ir_shape() const;
};

using Val = std::variant<ConstTensor, Act>;

Perm identity_perm(std::size_t rank);
Perm nhwc_perm();  // {0, 2, 3, 1}

class Converter {
 public:
  Converter(std::string graph_name, std::int64_t opset, std::vector<Node> nodes);

  void set_graph_outputs(std::set<std::string> names) { graph_outputs_ = std::move(names); }
  void add_input(const std::string& name, const Shape& shape);
  void add_constant(const std::string& name, ConstTensor value);
  void run();
  // Finishes the graph: the named ONNX outputs become the IR outputs.
  OnnxImport finish(const std::vector<std::string>& outputs);

  using Handler = void (Converter::*)(const Node&);
  // One handler per ONNX op type it maps; supported_onnx_ops() lists the keys.
  static const std::map<std::string, Handler>& handlers();

 private:
  // Values.
  const Val& value(const Node& n, std::size_t i) const;
  bool is_const(const Node& n, std::size_t i) const;
  const ConstTensor& const_input(const Node& n, std::size_t i) const;
  Act act_input(const Node& n, std::size_t i) const;
  std::optional<ConstTensor> optional_const(const Node& n, std::size_t i) const;
  void set(const std::string& name, Val v) { values_[name] = std::move(v); }
  void set_act(const Node& n, const std::string& op, Shape shape, Perm perm);

  // Look-ahead on the node list.
  std::vector<const Node*> consumers(const std::string& tensor) const;
  const Node* sole_consumer(const std::string& tensor) const;
  void absorb(const Node* n) { absorbed_.insert(n); }

  // Layouts.
  Act to_layout(const Act& a, const Perm& perm, const std::string& hint);
  Act to_identity(const Act& a, const std::string& hint) {
    return to_layout(a, identity_perm(a.shape.size()), hint);
  }
  Act to_nhwc(const Act& a, const std::string& hint);
  // Reshapes to `shape` (ONNX), without a transpose when the layout allows it.
  Act reshape(const Act& a, const Shape& shape, const std::string& hint);
  std::optional<Act> reshape_in_place(const Act& a, const Shape& shape, const std::string& hint);
  // Reshape/Flatten: in place, by permuting the weights of the fully connected layers
  // that alone consume it, or with a transpose.
  Act reshape_to(const Node& n, const Act& a, const Shape& target);
  // A constant in the IR layout of `a` (broadcast to a's rank first), for eltwise ops.
  ConstTensor const_in_layout(const ConstTensor& c, const Act& a, const std::string& who);
  std::string ir_const(const std::string& hint, const ConstTensor& c);
  // Elements `indices` of ONNX axis `axis` (kept, with the new length), exactly: a
  // matmul with a one-hot selection matrix over that axis moved last.
  Act select(const Act& a, std::int64_t axis, const std::vector<std::int64_t>& indices,
             const std::string& hint);
  // Drops ONNX axis `axis` of size 1.
  Act drop_axis(const Act& a, std::int64_t axis, const std::string& hint);

  const Node* foldable_batch_norm(const Node& conv) const;
  void fold(const Node& n);
  bool foldable(const Node& n) const;

  // Handlers (one per ONNX op type, see handlers()).
  void conv(const Node& n);
  void batch_norm(const Node& n);
  void pad(const Node& n);
  void pool(const Node& n);
  void global_pool(const Node& n);
  void reduce_mean(const Node& n);
  void gemm(const Node& n);
  void matmul(const Node& n);
  void add_sub(const Node& n);
  void mul_div(const Node& n);
  void unary(const Node& n);
  void clip(const Node& n);
  void leaky_relu(const Node& n);
  void hard_sigmoid(const Node& n);
  void softmax(const Node& n);
  void layer_norm(const Node& n);
  void concat(const Node& n);
  void flatten(const Node& n);
  void reshape_node(const Node& n);
  void squeeze(const Node& n);
  void unsqueeze(const Node& n);
  void transpose_node(const Node& n);
  void slice(const Node& n);
  void gather(const Node& n);
  void split(const Node& n);
  void passthrough(const Node& n);
  void expand(const Node& n);
  void shape_of(const Node& n);

  // Shared pieces.
  void emit_linear(const Node& n, const Act& x, std::vector<float> weights_nk, std::int64_t nout,
                   std::optional<std::vector<float>> bias, const std::string& out);
  struct ConvParams;
  std::string emit_conv(const Node& n, const Act& x, const ConstTensor& w,
                        std::optional<std::vector<double>> bias, std::int64_t group,
                        std::vector<std::int64_t> pads, const Node* bn);

  std::string graph_name_;
  std::int64_t opset_;
  std::vector<Node> nodes_;
  IrWriter w_;
  std::unordered_map<std::string, Val> values_;
  std::unordered_map<std::string, std::vector<const Node*>> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<const Node*> absorbed_;
  // Zero padding waiting for the Conv or AveragePool that consumes it: tensor -> (input, pads
  // as ONNX [x1_begin, x2_begin, x1_end, x2_end] over H and W).
  std::unordered_map<std::string, std::pair<Act, std::vector<std::int64_t>>> pending_pads_;
  std::map<std::string, int> mapped_;
  std::vector<OnnxInputInfo> inputs_;
};

}  // namespace dpushard::onnximport
