#pragma once
// The model representation: an XIR graph in the quantized `_int.xmodel` form.
//
// Float-domain ops (conv2d, add, relu, ...) whose outputs are followed by `fix` ops that
// carry the fix_point; weights are float `const` ops holding exactly int8 * 2^-fix_point,
// each followed by its own `fix`. Tensors are NHWC, conv weights OHWI. Compiled xmodels
// (`*-fix` ops and a subgraph tree with `device` attributes) are held in the same
// structure so they can be inspected; only the `_int` form is executed.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dpushard/graph/attr.hpp"

namespace dpushard {

// XIR's data type codes as stored in Tensor.data_type.
enum class DataType : std::int32_t {
  Int = 0,
  UInt = 1,
  XInt = 2,  // fixed-point int (int8 in compiled files)
  XUInt = 3,
  Float = 4,
  BFloat = 5,
  Unknown = 6,
};

std::string_view data_type_name(DataType type, int bit_width);  // "float32", "xint8", ...

struct TensorDesc {
  std::string name;
  std::vector<std::int64_t> shape;  // NHWC for feature maps
  DataType data_type = DataType::Float;
  std::int32_t bit_width = 32;
  AttrMap attrs;  // compiled files keep fix_point, ddr_addr, ... here

  std::int64_t element_count() const;
  bool operator==(const TensorDesc&) const = default;
};

// One named input slot of an op ("input", "weights", "bias", ...) and the ops feeding it.
struct OpArg {
  std::string name;
  std::vector<std::string> producers;
  bool operator==(const OpArg&) const = default;
};

struct Op {
  std::string name;
  std::string type;  // XIR op type string: "conv2d", "fix", "conv2d-fix", ...
  AttrMap attrs;
  std::vector<OpArg> args;
  TensorDesc output;

  // Producers of the arg named `arg`, or an empty list.
  const std::vector<std::string>& producers(std::string_view arg) const;
  // All producers of all args, in arg order.
  std::vector<std::string> all_producers() const;
  bool operator==(const Op&) const = default;
};

// A node of the compiled subgraph tree (root -> USER/DPU/CPU children -> ...).
struct Subgraph {
  std::string name;
  std::vector<std::string> ops;
  AttrMap attrs;
  std::vector<Subgraph> children;

  std::string device() const;  // the `device` attribute, or "" when absent
  bool operator==(const Subgraph&) const = default;
};

class Graph {
 public:
  Graph() = default;
  explicit Graph(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Adds an op; throws dpushard::Error on a duplicate name. Producers may be added later
  // (files list ops in any order); validate() checks that every producer exists.
  Op& add_op(Op op);
  // Removes the op named `name` (throws if missing). Consumers are not rewired.
  void remove_op(std::string_view name);

  const std::vector<Op>& ops() const { return ops_; }
  std::vector<Op>& mutable_ops() { return ops_; }  // names must not be changed through it
  std::size_t size() const { return ops_.size(); }

  const Op* find(std::string_view name) const;
  Op* find(std::string_view name);
  const Op& op(std::string_view name) const;  // throws naming the op when missing

  // Ops that take `name` as an input, in graph order.
  std::vector<const Op*> consumers(std::string_view name) const;

  // Indices into ops() in an order where every producer precedes its consumers; stable
  // (ties keep file order). Throws naming an op on a cycle or a missing producer.
  std::vector<std::size_t> topological_order() const;

  // `data` ops in graph order: the model's inputs.
  std::vector<const Op*> inputs() const;
  // Ops no other op consumes, excluding consts: the model's outputs, in graph order.
  std::vector<const Op*> outputs() const;

  AttrMap& attrs() { return attrs_; }
  const AttrMap& attrs() const { return attrs_; }
  std::optional<Subgraph>& root() { return root_; }
  const std::optional<Subgraph>& root() const { return root_; }
  // Serialized XIR OpDef messages (field 101), kept verbatim so files round-trip.
  std::vector<std::string>& op_defs() { return op_defs_; }
  const std::vector<std::string>& op_defs() const { return op_defs_; }

  bool operator==(const Graph& other) const;

 private:
  void reindex();

  std::string name_;
  std::vector<Op> ops_;
  std::unordered_map<std::string, std::size_t> index_;
  AttrMap attrs_;
  std::optional<Subgraph> root_;
  std::vector<std::string> op_defs_;
};

// True for files produced by the compiler (any `*-fix` op, or a subgraph tree with children).
bool is_compiled(const Graph& graph);

// Models written without their weights' values (`dpushard zoo --no-weights`, marked by the
// graph attribute `dpushard_weights_omitted`): const ops carry shapes and fix points only.
// Enough to split, predict and inspect; nothing can compute on them.
bool weights_omitted(const Graph& graph);
void mark_weights_omitted(Graph& graph);
// Throws dpushard::Error "<who>: model 'NAME' was written without weights ..." for such a graph.
void require_weights(const Graph& graph, std::string_view who);

// The fix_point of the int8 tensor produced by `op_name`: a `fix` op's own attribute, a
// compiled op's output tensor attribute, or that of the nearest fix producer through ops
// that only move data (reshape, flatten, transpose, concat of equal fix points, ...).
// Empty when the tensor is not fixed-point.
std::optional<int> fix_point_of(const Graph& graph, std::string_view op_name);

// Ops that only rearrange int8 values and so keep their input's fix_point.
bool is_layout_op(std::string_view type);

// Float weights of a `const` op (its `data` attribute as float32), or throws naming it.
std::vector<float> const_values(const Op& op);
// Stores float32 values as the `data` attribute of a const op.
void set_const_values(Op& op, const std::vector<float>& values);

}  // namespace dpushard
