#pragma once
// A double-precision interpreter of `_int` graphs, written for the tests independently of
// the ref backend, for the ops the ResNet-20 fixture uses: conv2d, relu, add, avgpool2d
// (the true mean), mul, reshape, stack, matmul. Fix ops either quantize-dequantize with
// their own round mode (fake_quant: the quantizer's simulation of the DPU) or pass values
// through (the float model over the dequantized weights).

#include <cstdint>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::testing {

struct FloatTensor {
  std::vector<std::int64_t> shape;
  std::vector<double> values;
};

// `inputs` are the int8 values after each data op's fix, in graph.inputs() order; returns
// the graph.outputs() values. Fails the current test on an op it does not know.
std::vector<FloatTensor> run_float_reference(const Graph& graph, const std::vector<QTensor>& inputs,
                                             bool fake_quant);

}  // namespace dpushard::testing
