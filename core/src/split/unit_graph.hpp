#pragma once
// The graph the strategies plan on. Ops are grouped into units that must stay together: a
// fix op with the float ops that produce its input (conv -> relu -> fix), merged further
// wherever a float value feeds several ops. Units exchange only fixed (int8) tensors, so
// any set of units is a legal fragment; constants and free layout ops are copied into
// every fragment that reads them. Model inputs (data -> fix) are units of their own that
// no fragment owns: every fragment that reads one gets it from the orchestrator.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/split/oracle.hpp"
#include "dpushard/split/split.hpp"
#include "op_classes.hpp"

namespace dpushard::split {

using UnitId = std::size_t;

struct Unit {
  std::vector<std::size_t> ops;  // op indices, in graph order
  std::vector<UnitId> preds;     // distinct units it reads from (model inputs included)
  std::vector<UnitId> succs;
  bool is_input = false;  // a model input: data -> fix
  double seconds = 0;     // predicted compute per frame on the oracle's placement
  std::int64_t macs = 0;
  std::int64_t params = 0;
  std::int64_t weight_bytes = 0;
};

// A fixed tensor read across units: the activation fix producing it and who reads it.
struct CrossTensor {
  std::size_t fix;  // op index
  UnitId producer;
  std::vector<UnitId> readers;  // units other than the producer, ascending
  bool model_output = false;
};

class UnitGraph {
 public:
  UnitGraph(const Graph& graph, const Oracle& oracle, const CostModel& cost);

  const Graph& graph() const { return graph_; }
  const Oracle& oracle() const { return oracle_; }
  const OpClasses& classes() const { return classes_; }
  const std::vector<Unit>& units() const { return units_; }
  const Unit& unit(UnitId id) const { return units_[id]; }
  // The unit owning an op; nullopt for constants and free layout ops.
  std::optional<UnitId> unit_of(std::size_t op) const { return unit_of_[op]; }
  // Units in a topological order that follows the file's order where it can.
  const std::vector<UnitId>& order() const { return order_; }
  std::size_t position(UnitId id) const { return position_[id]; }
  // Every fixed tensor crossing units or leaving the model, by producing fix op.
  const std::vector<CrossTensor>& tensors() const { return tensors_; }
  const CrossTensor* tensor(std::size_t fix) const;
  // The fixed tensors `u` reads from other units (through free layout ops too).
  const std::vector<std::size_t>& reads(UnitId u) const { return reads_[u]; }
  // Model outputs (op indices) in the model's output order.
  const std::vector<std::size_t>& model_outputs() const { return model_outputs_; }
  double total_seconds() const { return total_seconds_; }
  // Extra seconds when `fix` is shipped unfixed (--no-output-fix): the ops between it and
  // the previous fixes move to the CPU. 0 when the boundary would keep its fix.
  double naive_extra_seconds(std::size_t fix) const;
  // True when a --no-output-fix boundary at `fix` would drop it (see output_fix.hpp).
  bool naive_candidate(std::size_t fix) const;

 private:
  void build_units();
  void merge_cycles();
  void link_units();
  void cost_units(const Oracle& oracle, const CostModel& cost);

  const Graph& graph_;
  const Oracle& oracle_;
  const CostModel& cost_;
  OpClasses classes_;
  std::vector<Unit> units_;
  std::vector<std::optional<UnitId>> unit_of_;
  std::vector<UnitId> order_;
  std::vector<std::size_t> position_;
  std::vector<CrossTensor> tensors_;
  std::vector<std::size_t> tensor_index_;  // by op index; npos when not a cross tensor
  std::vector<std::vector<std::size_t>> reads_;
  std::vector<std::size_t> model_outputs_;
  std::vector<double> op_seconds_;
  double total_seconds_ = 0;
};

// The fixed tensors reached from op `op`'s producers through free layout ops (the values a
// fragment must receive to run it).
std::vector<std::size_t> fixed_sources(const Graph& graph, const OpClasses& classes,
                                       std::size_t op);

}  // namespace dpushard::split
