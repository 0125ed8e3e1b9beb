#pragma once
// Pipeline stages over one topological order of the owned units: a stage is a contiguous
// run of it, so every tensor a stage reads comes from an earlier stage (or the
// orchestrator) and a cut may cross any set of live tensors (every branch of a fork-join
// at one depth). Each crossing tensor is produced by a fix op (units end in fixes), and
// goes straight from the stage producing it to every later stage reading it.

#include <cstddef>
#include <vector>

#include "unit_graph.hpp"

namespace dpushard::split {

// The owned units (model inputs are fed by the orchestrator, never owned) in `order`.
std::vector<UnitId> owned_units(const UnitGraph& graph, const std::vector<UnitId>& order);

// A topological order by earliest start: every unit as soon as its inputs could be ready
// with unlimited nodes (the predicted seconds of the longest path to it), ties in file
// order. Parallel branches interleave, so its cuts cross every branch at one depth.
std::vector<UnitId> earliest_start_order(const UnitGraph& graph);

// What one stage costs per frame: its compute (fragment overhead and naive-boundary CPU time
// included), and its link's busy time receiving from earlier stages or the orchestrator and
// sending to later ones (each tensor counted once, the least it sends).
struct StageCost {
  double compute = 0;
  double receive = 0;
  double send = 0;
};

// `sequence` may be part of the units (an expert branch, say): tensors produced outside it
// arrive over the link like model inputs, and tensors read outside it leave like model
// outputs.
class StageCosts {
 public:
  StageCosts(const UnitGraph& graph, const CostModel& cost, bool output_fix,
             std::vector<UnitId> sequence);

  const std::vector<UnitId>& sequence() const { return seq_; }
  // The cost of the stage [begin, end] for every end from begin on, in one pass.
  template <class Visit>
  void scan(std::size_t begin, Visit&& visit) const;
  // The fix ops whose tensors cross the cut after position `k` (produced at or before it,
  // read after it), in op order.
  std::vector<std::size_t> crossing(std::size_t k) const;

 private:
  struct TensorInfo {
    std::size_t fix = 0;
    bool from_model = false;  // a model input or made outside the sequence: received
    std::size_t producer = 0;
    bool has_readers = false;
    std::size_t first_reader = 0, last_reader = 0;
    bool model_output = false;  // or read outside the sequence: always sent
    bool may_be_naive = false;  // --no-output-fix drops its fix when no reader is at home
    double naive_extra = 0;
    double link = 0;  // link busy seconds per frame
  };
  std::vector<UnitId> seq_;
  std::vector<TensorInfo> tensors_;
  std::vector<std::vector<std::size_t>> reads_at_;     // tensor indices read by position i
  std::vector<std::vector<std::size_t>> produced_at_;  // tensor indices produced at i
  std::vector<double> seconds_;
  double overhead_ = 0;
};

// The contiguous stages (end position of each, ascending; the last is the sequence's end)
// minimising, in order, the slowest stage or link, the slowest stage alone, and the sum of
// compute and sends. `max_stages` stages (at most one unit each) unless fewer give a lower
// bottleneck; never fewer than 2. `stage_scale[s]`, when given (one per stage slot), scales
// stage s's compute (1 / its node's speed, docs/splitting.md "Mixed boards").
std::vector<std::size_t> balance_stages(const StageCosts& costs, std::size_t max_stages,
                                        const std::vector<double>& stage_scale = {});

template <class Visit>
void StageCosts::scan(std::size_t begin, Visit&& visit) const {
  StageCost c;
  c.compute = overhead_;
  std::vector<char> received(tensors_.size(), 0);
  for (std::size_t end = begin; end < seq_.size(); ++end) {
    c.compute += seconds_[end];
    for (std::size_t t : reads_at_[end]) {
      const TensorInfo& info = tensors_[t];
      if (info.from_model || info.producer < begin) {
        if (!received[t]) c.receive += info.link;
        received[t] = 1;
        continue;
      }
      // Produced inside: no longer sent once its last reader joins, never naive once read.
      if (info.last_reader == end && !info.model_output) c.send -= info.link;
      if (info.may_be_naive && info.first_reader == end) c.compute -= info.naive_extra;
    }
    for (std::size_t t : produced_at_[end]) {
      const TensorInfo& info = tensors_[t];
      if (info.model_output || info.has_readers) c.send += info.link;
      if (info.may_be_naive) c.compute += info.naive_extra;
    }
    visit(end, c);
  }
}

}  // namespace dpushard::split
