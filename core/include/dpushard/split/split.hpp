#pragma once
// The planner: cuts a quantized model into fragments for N nodes without changing a single
// output bit. Strategies: experts (stem / fork-join branches / tail), pipeline (stages cut
// where one fix-terminated tensor is live), replicate (data parallel), hybrid (R replicas of
// an experts or pipeline plan on k nodes each, or experts whose branches are pipelined) and auto
// (the best of them for an objective, from a swappable cost model). See docs/splitting.md.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/perf/ethernet_link.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/plan/strategy_table.hpp"
#include "dpushard/split/oracle.hpp"

namespace dpushard {

struct Target;  // dpushard/perf/perf.hpp: a DPU target of the timing model
struct DpuUse;  // dpushard/perf/perf.hpp: the share of a frame's work and time on the DPU

// The strategies' names, parse_strategy: dpushard/plan/strategy_table.hpp.
enum class Objective { Latency, Throughput };
std::string_view objective_name(Objective objective);
Objective parse_objective(std::string_view text);

// Predicted time per frame of ops, fragments and transfers. The roofline model below is the
// default; the timing model of a DPU target (make_timing_cost_model) replaces it through
// this interface.
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  virtual std::map<std::string, double> parameters() const = 0;  // recorded in plan.yaml
  // Seconds per frame for `op` of `graph` on `device`.
  virtual double op_seconds(const Graph& graph, const Op& op, Device device) const = 0;
  // Fixed cost of running one fragment once (job submission, synchronisation).
  virtual double fragment_overhead_seconds() const = 0;
  // True for models that price an extracted fragment as a whole (fragment_seconds): they
  // know fragment-level effects (subgraph launches, the CPU penalty of fix-less outputs).
  // The planner then extracts every candidate's fragments and uses fragment_seconds for
  // their compute time. False (the default): a fragment costs the sum of op_seconds over
  // its ops on the oracle's placement, plus fragment_overhead_seconds().
  virtual bool prices_fragments() const { return false; }
  // Seconds per frame of an extracted fragment; only for models that price fragments
  // (the default throws dpushard::Error).
  virtual double fragment_seconds(const Graph& fragment) const;
  // An extracted fragment's time per frame split over a board's engines, for a node that
  // runs several fragments: each runs its frames one after the other (`seconds`), but their
  // DPU work only queues for the node's DPU cores, their A53 work (CPU ops, host side) for
  // its host cores, and their TCP work for its one network thread, so they overlap as the
  // `sim` workers model them. The default puts all of it on the DPU (no overlap).
  struct FragmentLoad {
    double seconds = 0;
    double dpu_seconds = 0;
    double host_seconds = 0;
    double net_seconds = 0;
  };
  virtual FragmentLoad fragment_load(const Graph& fragment) const;
  // An extracted fragment's DPU utilization (its work and one frame's time on the DPU), for
  // plan.yaml; false when the model does not place ops as the DPU would (the roofline).
  virtual bool fragment_dpu_use(const Graph& /*fragment*/, DpuUse& /*use*/) const { return false; }
  virtual int dpu_cores() const { return 1; }
  virtual int host_cores() const { return 1; }
  // Seconds from the start of sending `bytes` to their arrival on another node (or between
  // the orchestrator and a node): latency plus serialisation.
  virtual double transfer_seconds(std::int64_t bytes) const = 0;
  // Seconds the link is busy with `bytes` (serialisation only: latency overlaps when
  // frames pipeline). Limits throughput.
  virtual double link_busy_seconds(std::int64_t bytes) const = 0;
};

// A roofline: time = max(MACs / MAC rate, bytes / memory rate) on the DPU, MACs and
// elements at CPU rates on the CPU, and the link's goodput for transfers. Defaults are the
// KV260's (docs/splitting.md lists where each comes from).
struct RooflineParams {
  double dpu_peak_gmacs = 614.4;   // B4096: 2048 MAC/cycle at 300 MHz
  double dpu_efficiency = 0.57;    // ResNet-50 at 85.5 fps on the KV260
  int dpu_channel_parallel = 16;   // input and output channels round up to this
  double ddr_gbytes_per_s = 19.2;  // 64-bit DDR4-2400
  double ddr_efficiency = 0.5;
  double cpu_gmacs = 5.85;            // conv on the A53: about 60x slower than the DPU
  double cpu_ns_per_element = 10.0;   // float ops (softmax, layernorm, gelu, ...) on the A53
  double fragment_overhead_ms = 0.1;  // one DPU job: submit, run, wait
  // The link: dpushard/perf/ethernet_link.hpp, the constants the emulated link paces with too.
  double link_gbps = ethernet::kLineRateGbps;             // Ethernet line rate
  double link_efficiency = ethernet::kPayloadEfficiency;  // TCP payload per wire byte
  double link_latency_ms = ethernet::kOneWayLatencyMs;    // per transfer
};
std::unique_ptr<CostModel> make_roofline_cost_model(const RooflineParams& params = {});

// The timing model of a DPU target (perf.hpp; `dpushard predict`) as the cost model, named
// "timing:<target>": a fragment costs predict(fragment).frame_ms (DPU and CPU ops, subgraph
// launches, the boundary penalty of fix-less outputs); single ops cost time_op() for the
// strategies' search; transfers cost latency plus the bytes at the link's goodput.
struct TimingCostParams {
  // The link: dpushard/perf/ethernet_link.hpp, the constants the emulated link paces with too.
  double link_gbps = ethernet::kLineRateGbps;             // Ethernet line rate
  double link_efficiency = ethernet::kPayloadEfficiency;  // TCP payload per wire byte
  double link_latency_ms = ethernet::kOneWayLatencyMs;    // per transfer
};
std::unique_ptr<CostModel> make_timing_cost_model(const Target& target,
                                                  const TimingCostParams& params = {});

struct SplitOptions {
  int nodes = 1;
  // A requestable strategy of the table (dpushard/plan/strategy_table.hpp); default: auto.
  std::string strategy = chooser_strategy();
  Objective objective = Objective::Latency;
  // > 0: only plans whose predicted per-frame latency (the cost model's, not a measured p99)
  // is at most this many ms; auto picks the best of those for the objective, a named strategy
  // must meet it, and no plan meeting it is an error naming the best latency reachable.
  double max_latency_ms = 0;
  bool output_fix = true;         // false: the naive split for the ablation (--no-output-fix)
  std::vector<std::string> cuts;  // pipeline: ops to cut after (moved to safe points)
  // hybrid: the number of replicas (>= 2 nodes per replica; nodes left over stay idle); 1:
  // only the experts with pipelined branches; 0: every R is tried (pipelined experts on all
  // nodes, and for each R >= 2 replicas of experts, pipeline and pipelined experts).
  int replicas = 0;
  // experts: a fork-join is used only when its branches hold at least this fraction of
  // the model's predicted time in parallel (sum of branches minus the largest one).
  double min_parallel_fraction = 0.05;
  const Oracle* oracle = nullptr;         // null: Oracle::builtin()
  const CostModel* cost_model = nullptr;  // null: the roofline with link_gbps below
  double link_gbps = 1.0;
  // The memory a node gives models (Target::model_memory_bytes; 0: no budget). Only plans
  // whose every node's fragments fit are proposed; a named strategy that does not fit is an
  // error naming the fragment, its need and the budget (docs/splitting.md "Memory budgets").
  std::int64_t memory_budget_bytes = 0;
  std::string memory_board;  // the target whose budget it is, for messages and plan.yaml
  int frames_in_flight = 2;  // feature maps counted per fragment (`dpushard run --inflight`)
  // Mixed boards (docs/splitting.md "Mixed boards"), one entry per node when given: node n's
  // cost model (its target's timing model; null: cost_model), its target's name (recorded
  // in plan.yaml as node_targets) and its memory for models (0: memory_budget_bytes).
  // Fragments are priced on the node that runs them and strategies weigh each node's speed
  // and DPU cores. Empty: every node is cost_model's board with memory_budget_bytes.
  std::vector<const CostModel*> node_cost_models;
  std::vector<std::string> node_targets;
  std::vector<std::int64_t> node_memory_budget_bytes;
  // Mixed boards: place fragments as a single-target split would (every node cost_model's
  // board), then price and fit them on each node's own board: what a plan made for one
  // target gives on the mixed cluster (`split --uniform-placement`).
  bool uniform_placement = false;
  std::string model_file;    // recorded in the plan
  std::string model_sha256;  // recorded in the plan
};

struct SplitResult {
  Plan plan;                     // fragment files and hashes filled in by write_split
  std::vector<Graph> fragments;  // one per plan.fragments entry, same order
};

// Plans the split; throws dpushard::Error with the reason when the model cannot be split
// as asked (a refused cut, no nodes, a compiled xmodel, ...).
SplitResult split_model(const Graph& model, const SplitOptions& options);

// Writes `dir`/fragments/<name>_int.xmodel for every fragment, records their sha256 in the
// plan, then writes `dir`/plan.yaml (all atomically). Returns the plan as written.
Plan write_split(SplitResult& result, const std::filesystem::path& dir);

// Frames in flight that saturate `plan` (MLPerf LoadGen's Offline scenario): twice the
// frames its predicted throughput keeps busy over its predicted single-frame latency
// (Little's law, rounded up: on every leg of a frame's path one at work and one waiting),
// plus one per node. At least 2. From the plan's prediction alone (docs/benchmarking.md).
int offline_inflight(const Plan& plan);

}  // namespace dpushard
