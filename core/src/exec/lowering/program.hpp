#pragma once
// The execution program of the ref and cpu backends: every int8 tensor of the graph gets a slot
// (preallocated at load), every `producer [-> nonlinear] -> fix` chain becomes one kernel
// that reads slots and writes its output slot. Running a frame runs the kernels in order.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/numerics.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::lowering {

using SlotId = std::size_t;
using Slots = std::vector<QTensor>;

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Reads input slots, writes the output slot; allocates nothing.
  virtual void run(Slots& slots) = 0;
};

struct Program {
  Slots slots;  // activations and quantized constants, sized at load
  std::vector<std::unique_ptr<Kernel>> kernels;  // execution order
  std::vector<SlotId> inputs;                    // graph.inputs() order
  std::vector<SlotId> outputs;                   // graph.outputs() order
};

// One frame through a lowered program, for every backend built on it (ref, cpu): copies the
// inputs into their slots after checking shape, fix point and size (errors start with
// `backend`), runs the kernels in order and returns copies of the output slots.
std::vector<QTensor> run_program(Program& program, const std::vector<QTensor>& inputs,
                                 std::string_view backend);

// One lowered chain as the lowering hands it to a kernel factory.
struct Chain {
  const Op& producer;   // conv2d, add, avgpool2d, ... (the nonlinear itself when standalone)
  const Op* nonlinear;  // relu / relu6 / leaky-relu / float activation between, or null
  const Op& fix;        // the closing fix op
  int fp_out;
  RoundMode round_mode;  // the fix's round mode (used by float computations)
  SlotId out;            // output slot, already shaped like the fix op's output
};

// What a kernel factory may ask the lowering about the values around its chain.
class Lowering {
 public:
  explicit Lowering(const Graph& graph) : graph_(graph) {}
  virtual ~Lowering() = default;
  Lowering(const Lowering&) = delete;
  Lowering& operator=(const Lowering&) = delete;

  const Graph& graph() const { return graph_; }
  // The slot of the int8 value produced by `producer`, as read by `consumer`; throws
  // naming both when that value is not fixed-point.
  virtual SlotId fixed(const Op& consumer, std::string_view producer) const = 0;
  // Float values of a `const` op that is not followed by a fix (the quantizer's scale
  // constants), or empty when `producer` is anything else.
  virtual std::optional<std::vector<float>> raw_const(std::string_view producer) const = 0;
  virtual const QTensor& slot(SlotId id) const = 0;

  // Shorthands: the slot of producer `index` of `arg`, throwing naming the op when absent.
  SlotId arg_slot(const Op& op, std::string_view arg, std::size_t index) const;
  std::optional<SlotId> optional_arg_slot(const Op& op, std::string_view arg,
                                          std::size_t index) const;

 private:
  const Graph& graph_;
};

// "ref: op 'NAME' (TYPE): WHAT", the one-line error every load failure uses.
[[noreturn]] void fail(const Op& op, const std::string& what);

}  // namespace dpushard::lowering
