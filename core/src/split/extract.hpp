#pragma once
// Fragment extraction: each fragment becomes a self-contained `_int` graph. Its owned
// units are copied with the constants and free layout ops they read; every fixed tensor it
// reads from elsewhere becomes a `data` op followed by a copy of the producer's fix op (same
// name, same fix_point), so the int8 values crossing are exactly the whole model's.

#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "partition.hpp"

namespace dpushard::split {

struct ExtractedFragment {
  Graph graph;
  std::vector<PlanTensor> inputs;   // graph.inputs() order
  std::vector<PlanTensor> outputs;  // graph.outputs() order
};

struct Extraction {
  std::vector<ExtractedFragment> fragments;  // partition order
  std::vector<PlanEdge> edges;
  std::vector<PlanAdjustment> adjustments;  // naive cuts, outputs kept with output_ops
};

// With output_fix false, a boundary whose fix follows a float op used only by it is cut
// before the fix (the naive split): the fragment ends at the float op and the fix moves to
// each reader, which receives the float value as its input.
//
// Weights::LeftOut leaves the `data` of const ops out of the fragments: enough for a cost
// model to price them (shapes and attributes are all there) without copying every weight
// of the model once per candidate plan. Such fragments do not validate and are never written.
enum class Weights { Copied, LeftOut };
Extraction extract(const UnitGraph& graph, const Partition& partition, bool output_fix,
                   Weights weights = Weights::Copied);

// The model's inputs and outputs as plan tensors.
std::vector<PlanTensor> model_inputs(const Graph& model);
std::vector<PlanTensor> model_outputs(const Graph& model);

}  // namespace dpushard::split
