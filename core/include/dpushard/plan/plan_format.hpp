#pragma once
// The plan format: the fragments of one model, the node slot each runs on and the tensors
// that flow between them. Stored as PLAN_DIR/plan.yaml (plan_yaml.hpp) beside
// PLAN_DIR/fragments/*_int.xmodel (fragment_io.hpp); the schema is documented in docs/plan.md.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/numerics.hpp"

namespace dpushard {

// An input or output of a fragment (or of the model).
struct PlanTensor {
  std::string name;  // the fix op after an input's data op; the op producing an output
  std::vector<std::int64_t> shape;
  int fix_point = 0;
  // False only for outputs of --no-output-fix plans: the fragment file ends at the float
  // before the fix. The runtime appends that fix (NAME__wire, fix_point and round_mode of the
  // reader's first fix) before sending, so int8 crosses here too, and the reader's first fix
  // leaves it unchanged: wire_fragment() in dpushard/plan/fragment_io.hpp.
  bool fixed = true;
  RoundMode round_mode = RoundMode::Dpu;

  std::int64_t element_count() const;
  // Bytes per frame on the wire: one int8 per element, fixed or not (see `fixed`).
  std::int64_t wire_bytes() const { return element_count(); }
  bool operator==(const PlanTensor&) const = default;
};

struct PlanFragmentCost {
  std::int64_t ops = 0;  // ops in the fragment file
  std::int64_t macs = 0;
  std::int64_t params = 0;
  std::int64_t weight_bytes = 0;
  double compute_ms = 0;  // the cost model's prediction per frame
  // What the fragment needs on its board: weights, code, feature maps of the frames in flight
  // (fragment_memory in dpushard/split/memory_budget.hpp); 0: not recorded.
  std::int64_t memory_bytes = 0;
  // DPU utilization from the timing model (DpuUse in dpushard/perf/perf.hpp), all 0 when the plan
  // was priced by another model: every op's work and that on the DPU (MACs, element ops for
  // the others), and one frame's DPU time and whole time alone, as a worker runs it.
  double work_macs = 0;
  double dpu_macs = 0;
  double dpu_ms = 0;
  double frame_ms = 0;
  bool operator==(const PlanFragmentCost&) const = default;
};

struct PlanFinding {  // one oracle finding, as recorded
  std::string op;
  std::string rule;
  std::string verdict;
  std::string reason;
  bool operator==(const PlanFinding&) const = default;
};

// The fragment compiled by vai_c_xir for one DPU (docs/plan.md, `compiled:`): what `vart`
// workers run instead of the `_int` file.
struct PlanCompiled {
  std::string file;  // relative to the plan folder
  std::string sha256;
  std::uint64_t dpu_fingerprint = 0;  // the DPU subgraph's, as compiled (never 0)
  bool operator==(const PlanCompiled&) const = default;
};

struct PlanFragment {
  std::string name;
  std::string role;  // "model", "stem", "experts", "tail", "stage"
  std::string file;  // relative to the plan folder
  std::string sha256;
  std::vector<int> nodes;             // node slots that run it (several for replicate)
  std::vector<std::string> branches;  // experts: the fork-join branches it holds
  std::vector<PlanTensor> inputs;     // in the fragment's input order
  std::vector<PlanTensor> outputs;    // in the fragment's output order
  PlanFragmentCost cost;
  std::string oracle_verdict;  // "dpu", "dpu+boundary", "cpu"
  int dpu_subgraphs = 0;
  std::vector<PlanFinding> oracle_findings;
  std::optional<PlanCompiled> compiled;  // absent until the fragment is compiled
  bool operator==(const PlanFragment&) const = default;
};

// `from`/`to` name a fragment, or "model" for the model's inputs and outputs.
struct PlanEdge {
  std::string from;
  std::string output;  // the producer's output tensor
  std::string to;
  std::string input;       // the consumer's input tensor (same name unless the output is unfixed)
  std::int64_t bytes = 0;  // per frame
  bool operator==(const PlanEdge&) const = default;
};

// Something the planner did on its own and why: a cut moved to a safe point, a fix
// inserted, a naive (unfixed) boundary, a strategy that fell back to another.
struct PlanAdjustment {
  // "moved_cut", "inserted_fix", "output_ops", "naive_cut", "kept_fix", "fallback",
  // "fewer_stages", "idle_nodes" (docs/plan.md)
  std::string kind;
  std::string at;
  std::string to;
  std::string reason;
  bool operator==(const PlanAdjustment&) const = default;
};

struct PlanPrediction {
  double latency_ms = 0;
  double throughput_fps = 0;
  std::int64_t wire_bytes_per_frame = 0;  // between nodes
  std::int64_t io_bytes_per_frame = 0;    // model inputs in and outputs out
  bool operator==(const PlanPrediction&) const = default;
};

struct PlanCandidate {  // what each strategy would give (auto records them all)
  std::string strategy;
  // hybrid: the plan each replica runs ("experts", "pipeline", "pipelined-experts")
  std::string inner_strategy;
  int replicas = 0;  // hybrid: how many replicas (0 for the other strategies)
  PlanPrediction predicted;
  std::string note;  // why a strategy was not possible, when it was not
  bool operator==(const PlanCandidate&) const = default;

  std::string label() const;  // plan_label(strategy, replicas, inner_strategy)
};

// The replica of each frame in one cycle of sum(share) frames: share[r] frames for replica
// r, spread as evenly as the shares allow (smooth weighted round robin); frame f runs on
// replica cycle[f mod cycle.size()]. {1, 1, 2} -> {2, 0, 1, 2}. Empty share: empty cycle.
std::vector<std::uint32_t> replica_cycle(const std::vector<int>& share);

// What a plan is, as the planner's candidates and the report name it: "experts", "hybrid 2x
// experts" (2 replicas of experts), "hybrid pipelined-experts" (one replica).
std::string plan_label(const std::string& strategy, int replicas,
                       const std::string& inner_strategy);

// The memory budget a plan was made for (docs/plan.md `memory:`): every node's fragments
// together must fit in budget_bytes. Absent (budget 0) in plans made without a target.
struct PlanMemory {
  std::int64_t budget_bytes = 0;  // per node
  std::string board;              // the target whose budget it is
  int frames_in_flight = 0;       // the feature maps counted per fragment
  // Mixed boards: node n's own budget (its target's), one per node; empty: budget_bytes
  // for every node.
  std::vector<std::int64_t> node_budget_bytes;
  bool operator==(const PlanMemory&) const = default;
};

struct Plan {
  int version = 1;
  std::string model_file;  // as given to `split`, for information
  std::string model_name;
  std::string model_sha256;
  std::vector<PlanTensor> model_inputs;   // the model's input order
  std::vector<PlanTensor> model_outputs;  // the model's output order
  std::string strategy;                   // the one used
  // hybrid only: every fragment has `replicas` nodes, nodes[r] in replica r, and replica r
  // runs an `inner_strategy` plan on nodes of its own (frame k goes to replica k mod R):
  // experts or pipeline (R >= 2), or pipelined-experts (R >= 1).
  std::string inner_strategy;
  int replicas = 0;
  std::string requested_strategy;  // the one asked for
  std::string objective;           // "latency" or "throughput"
  double max_latency_ms = 0;       // the predicted-latency bound; 0: none
  int nodes = 1;
  // Each node slot's target (docs/splitting.md "Mixed boards"): the board the planner priced
  // its fragments on, and the one `run` expects there. Empty: not recorded (one kind of
  // board, `cost_model` says which).
  std::vector<std::string> node_targets;
  // replicate only: replica r (nodes[r] of the fragment) runs frame_share[r] of every
  // sum(frame_share) frames, in the order replica_cycle gives (boards of unequal speed take
  // frames in proportion). Empty: equal shares, frame f on nodes[f mod R].
  std::vector<int> frame_share;
  bool output_fix = true;
  double link_gbps = 1.0;
  std::string cost_model;
  std::map<std::string, double> cost_parameters;
  std::string oracle;     // the oracle's name and origin
  std::string structure;  // one line: what the planner found (fork-join, cut points)
  PlanMemory memory;
  PlanPrediction predicted;
  std::vector<PlanCandidate> candidates;
  std::vector<PlanFragment> fragments;  // plan order: every producer before its consumers
  std::vector<PlanEdge> edges;
  std::vector<PlanAdjustment> adjustments;
  bool operator==(const Plan&) const = default;

  const PlanFragment& fragment(std::string_view name) const;  // throws when unknown
};

}  // namespace dpushard
