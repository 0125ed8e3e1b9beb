#pragma once
// The A53 path of a compiled model's CPU subgraphs, for `dpushard calibrate` (docs/perf.md
// "Calibration from a board"). The vart backend runs one DPU subgraph fed by the model's
// inputs (docs/vart.md); VART itself has no CPU path without graph_runner, which dpushard
// does not use. A model whose CPU ops come after its DPU subgraph (a DPU body, then a
// softmax, a layernorm, a LeakyReLU the DPU cannot run ...) is run here as the board would
// run it: the DPU subgraph through VART, then the CPU ops on the host with one of dpushard's
// own backends (`ref`, or `cpu` where it is built), frame by frame.

#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::cli {

struct CpuPath {
  Graph dpu;  // the compiled model without its CPU subgraphs: what the vart backend runs
  // The CPU subgraphs' ops in `_int` form (XIR's float ops lowered, lower_float_ops.hpp), each
  // DPU tensor they read an input.
  Graph cpu;
  // Per input of `cpu` (in input_specs order): the output of `dpu` it takes.
  std::vector<std::string> links;
};

// nullopt when the model has no CPU op (a CPU subgraph holding only the fix2float after a
// DPU output is none: the vart backend skips it). Throws dpushard::Error (one line) when a
// CPU op feeds the DPU subgraph or reads a model input (graph_runner's models, not a DPU
// body with a CPU tail).
std::optional<CpuPath> split_cpu_path(const Graph& compiled);

// The host inputs of `path.cpu` from the DPU part's outputs of one frame.
std::vector<QTensor> cpu_inputs(const CpuPath& path, const std::vector<QTensor>& specs,
                                const std::vector<QTensor>& dpu_outputs);

}  // namespace dpushard::cli
