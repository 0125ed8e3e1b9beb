#pragma once
// A model whose last op runs on the CPU: a 1x1 conv on the DPU, then softmax (a
// transcendental CPU op) or LeakyReLU 0.2 (an elementwise one the DPU does not take). The
// calibration tests time and fit such models' A53 path.

#include <cstdint>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard::testing {

// `kind` is "softmax" or "leaky"; the input is side x side x channels. The weights are real
// (all ones), so the model runs as well as predicts.
Graph cpu_tail_model(const std::string& kind, std::int64_t side, std::int64_t channels);

}  // namespace dpushard::testing
