#pragma once
// Builds `_int` graphs op by op, emitting the fix ops the quantizer would: every value a
// builder method returns is fix-terminated (or a layout op over one), so it is a legal
// cut point. Used by the zoo, the micro-models, the ONNX importer and tests.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/numerics.hpp"

namespace dpushard {

// A tensor in the graph being built: the op producing it, its shape and fix_point.
struct Value {
  std::string op;
  std::vector<std::int64_t> shape;
  int fix_point = 0;
};

// leaky = alpha 0.1 (26/256). HardSigmoid and HardSwish are the DPUCZDX8G's other conv
// activations (UG1414, "Currently Supported Operators").
enum class Nonlinear { None, Relu, Relu6, LeakyRelu, HardSigmoid, HardSwish };

struct Conv2dSpec {
  std::array<std::int64_t, 2> kernel{3, 3};  // {height, width}
  std::array<std::int64_t, 2> stride{1, 1};  // {height, width}
  std::array<std::int64_t, 2> dilation{1, 1};
  std::array<std::int64_t, 4> pad{1, 1, 1, 1};  // {left, right, top, bottom}, as XIR
  std::int64_t group = 1;
  Nonlinear nonlinear = Nonlinear::None;
};

struct Pool2dSpec {
  std::array<std::int64_t, 2> kernel{2, 2};  // {height, width}
  std::array<std::int64_t, 2> stride{2, 2};
  std::array<std::int64_t, 4> pad{0, 0, 0, 0};  // {left, right, top, bottom}
  bool global = false;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name);

  // data -> fix. shape NHWC.
  Value input(const std::string& name, std::vector<std::int64_t> shape, int fix_point);
  // const (float = q * 2^-fp) -> fix.
  Value constant(const std::string& name, std::vector<std::int64_t> shape,
                 const std::vector<std::int8_t>& q, int fix_point);
  // const -> fix with the shape but no values; marks the graph weights_omitted().
  Value shaped_constant(const std::string& name, std::vector<std::int64_t> shape, int fix_point);

  // conv2d [-> relu|relu6|leaky-relu] -> fix. weights OHWI [oc, kh, kw, ic/group],
  // bias [oc] (optional).
  Value conv2d(const std::string& name, const Value& x, const Value& weights,
               const std::optional<Value>& bias, const Conv2dSpec& spec, int out_fp);
  // depthwise-conv2d: weights [1, kh, kw, c] (channel multiplier 1).
  Value depthwise_conv2d(const std::string& name, const Value& x, const Value& weights,
                         const std::optional<Value>& bias, const Conv2dSpec& spec, int out_fp);
  // matmul(a, b [, bias]) -> fix, b transposed when transpose_b (b is [n, k] then).
  Value matmul(const std::string& name, const Value& a, const Value& b,
               const std::optional<Value>& bias, bool transpose_b, int out_fp,
               Nonlinear nonlinear = Nonlinear::None);
  // Elementwise add/mul of equal shapes (mul broadcasts a [.., 1] or [c] operand) -> fix.
  Value add(const std::string& name, const std::vector<Value>& xs, int out_fp,
            Nonlinear nonlinear = Nonlinear::None);
  Value mul(const std::string& name, const Value& a, const Value& b, int out_fp);
  // Standalone activations over a fixed input -> fix.
  Value relu(const std::string& name, const Value& x, int out_fp);
  Value relu6(const std::string& name, const Value& x, int out_fp);
  Value leaky_relu(const std::string& name, const Value& x, double alpha, int out_fp);
  Value maxpool2d(const std::string& name, const Value& x, const Pool2dSpec& spec);
  Value avgpool2d(const std::string& name, const Value& x, const Pool2dSpec& spec, int out_fp);
  Value concat(const std::string& name, const std::vector<Value>& xs, std::int64_t axis,
               int out_fp);
  // Layout ops: no fix, the fix_point passes through.
  Value reshape(const std::string& name, const Value& x, std::vector<std::int64_t> shape);
  Value flatten(const std::string& name, const Value& x, std::int64_t start_axis,
                std::int64_t end_axis);
  Value transpose(const std::string& name, const Value& x, std::vector<std::int64_t> order);
  // Float ops between fix ops (CPU ops on the KV260's DPU).
  Value softmax(const std::string& name, const Value& x, std::int64_t axis, int out_fp);
  Value layernorm(const std::string& name, const Value& x, const Value& gamma, const Value& beta,
                  double epsilon, int out_fp);
  Value gelu(const std::string& name, const Value& x, int out_fp);
  Value sigmoid(const std::string& name, const Value& x, int out_fp);

  // Appends an explicit fix after `x` (fix_point `fp`); used by the splitter.
  Value fix(const std::string& name, const Value& x, int fp);

  // Infers and validates, then hands the graph over. The builder is empty afterwards.
  Graph finish();
  Graph& graph() { return graph_; }

 private:
  Value add_fixed(Op op, int out_fp, RoundMode mode = RoundMode::Dpu);
  Value value_of(const std::string& op_name, int fp) const;

  Graph graph_;
};

// The `fix` op the quantizer emits: attrs fix_point, bit_width 8, if_signed, round_mode.
Op make_fix_op(const std::string& name, const std::string& input, int fix_point,
               RoundMode mode = RoundMode::Dpu);

std::string_view nonlinear_op_type(Nonlinear nl);  // "relu", ..., "hard-swish", ""

}  // namespace dpushard
