#pragma once
// What the vart backend needs to know about a compiled fragment, read from dpushard's own
// graph (no Xilinx library, so it is built and tested everywhere): the one DPU subgraph,
// and which of its boundary tensors are the fragment's inputs and outputs, in graph order.
//
// Supported: exactly one DPU subgraph, fed only by the graph's `data-fix` inputs, whose
// outputs are the graph's outputs, either directly or through the `fix2float` op the
// compiler appends on the CPU (VITIS_AI.md section 4). That is what a fragment ending in an
// output fix op compiles to. Anything else needs Vitis AI's graph_runner and is refused with
// one line naming the graph and the subgraphs found.

#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard::vart_detail {

struct DpuTensorBinding {
  std::string name;                 // the QTensor name: the op in graph.inputs() / outputs()
  std::string tensor;               // the DPU subgraph's boundary tensor (VART's tensor name)
  std::vector<std::int64_t> shape;  // NHWC, batch first
  int fix_point = 0;                // as the file records it
};

struct DpuBinding {
  std::string subgraph;                   // the DPU subgraph's name
  std::vector<DpuTensorBinding> inputs;   // graph.inputs() order
  std::vector<DpuTensorBinding> outputs;  // graph.outputs() order
};

// Throws dpushard::Error ("vart: graph 'NAME': ...") when `graph` is not compiled, has no or
// several DPU subgraphs, or when CPU ops feed the DPU subgraph or compute an output.
DpuBinding bind_dpu_subgraph(const Graph& graph);

}  // namespace dpushard::vart_detail
