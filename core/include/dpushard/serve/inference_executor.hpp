#pragma once
// What `dpushard serve` runs requests on: one model behind an interface small enough for
// both the in-process plan runner (LocalExecutor, local_executor.hpp) and the cluster
// (`serve --cluster`, next: an executor over the orchestrator's frames in flight).

#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/graph/numerics.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard {

// One model input or output as a client sees it: int8 at a fix point (value = q * 2^-fp).
struct ServedTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  int fix_point = 0;
  RoundMode round_mode = RoundMode::Dpu;  // inputs: how float values are quantized
};

struct ServedModel {
  std::string name;
  std::vector<ServedTensor> inputs;   // the model's input order
  std::vector<ServedTensor> outputs;  // the model's output order
};

// What one node did since the executor started (Prometheus counters).
struct NodeStats {
  std::string node;
  double busy_seconds = 0;  // time spent computing frames
  std::uint64_t frames = 0;
  std::uint64_t bytes_in = 0;   // input tensor bytes it received
  std::uint64_t bytes_out = 0;  // output tensor bytes it sent
};

class InferenceExecutor {
 public:
  virtual ~InferenceExecutor() = default;
  virtual const ServedModel& model() const = 0;
  // True when a request would run now (the cluster: every node of the plan answered).
  virtual bool ready() const = 0;
  // How many infer() calls may run at once: the server's queue keeps that many frames in
  // flight (a cluster executor: its window of frames; the local one: its runners).
  virtual int max_in_flight() const = 0;
  // The model's outputs in order for `inputs` (the model's inputs in order, shapes and fix
  // points as model() says). Called from up to max_in_flight() threads at once. Throws
  // dpushard::Error when the frame cannot run.
  virtual std::vector<QTensor> infer(const std::vector<QTensor>& inputs) = 0;
  // Per node, for /metrics; thread-safe.
  virtual std::vector<NodeStats> node_stats() const = 0;
};

}  // namespace dpushard
