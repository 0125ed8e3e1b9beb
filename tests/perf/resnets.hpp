#pragma once
// torchvision's ResNet-18 and ResNet-50 (v1.5: stride on the 3x3 conv) as `_int` graphs,
// built layer for layer with GraphBuilder at 224x224. Weights are constant: the timing
// model reads shapes only. The calibration uses ResNet-50 (docs/perf.md).

#include "dpushard/graph/graph.hpp"

namespace dpushard::testing {

Graph make_resnet50();
Graph make_resnet18();

}  // namespace dpushard::testing
