#pragma once
// Memory budgets: what a fragment needs on its board (int8 weights and bias, the DPU's
// instruction code, the feature maps of the frames in flight) against what the board's
// target gives models (Target::model_memory_bytes, targets/*.yaml `memory.model_mib`).
// See docs/splitting.md, "Memory budgets".

#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/plan/plan_memory.hpp"

namespace dpushard {

// Frames a worker keeps in flight per fragment: `dpushard run --inflight` (RunOptions::inflight
// in dpushard/cluster/cluster.hpp), whose default this is.
inline constexpr int kDefaultFramesInFlight = 2;

// The DPU's instruction code per byte of activations a fragment writes per frame: the
// compiler emits instructions per output tile, so code grows with the feature maps, not the
// weights. The KV260 MobileNetV2 fixture's DPU subgraph has 252,724 bytes of mc_code for
// about 7.0 MB of int8 activations (0.036); the VCK190 ResNet-20 fixture 5,691 for 290 KB
// (0.020). Rounded up: 1/25.
inline constexpr std::int64_t kActivationBytesPerCodeByte = 25;

struct FragmentMemory {
  std::int64_t weight_bytes = 0;  // int8 weights + bias (graph_cost)
  std::int64_t code_bytes = 0;    // instruction code estimate (kActivationBytesPerCodeByte)
  std::int64_t io_bytes = 0;      // one frame's inputs and outputs, int8
  std::int64_t live_bytes = 0;    // one frame's largest set of live intermediate tensors
  int frames_in_flight = kDefaultFramesInFlight;
  std::int64_t feature_bytes() const { return (io_bytes + live_bytes) * frames_in_flight; }
  std::int64_t total_bytes() const { return weight_bytes + code_bytes + feature_bytes(); }
};

// What `fragment` (an `_int` graph, with or without its weights' values) needs on its board.
FragmentMemory fragment_memory(const Graph& fragment,
                               int frames_in_flight = kDefaultFramesInFlight);

}  // namespace dpushard
