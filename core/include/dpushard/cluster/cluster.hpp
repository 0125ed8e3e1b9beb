#pragma once
// Running a plan on a cluster of workers (docs/cluster.md): cluster.yaml, and the
// orchestrator that uploads fragments, sends routing tables, streams frames with a
// bounded number in flight and collects outputs. Tensors go from the node that produces
// them straight to the node that consumes them; the orchestrator only injects inputs and
// collects outputs.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/tensor.hpp"
#include "dpushard/net/protocol.hpp"
#include "dpushard/perf/ethernet_link.hpp"
#include "dpushard/plan/plan_format.hpp"

namespace dpushard::cluster {

struct NodeConfig {
  std::string name;
  std::string address;  // HOST:PORT of its `dpushard worker`
  std::string backend;  // the backend the worker must run; empty: any
  std::string target;   // the hardware it stands for ("kv260", "host", ...); informative
  int line = 0;         // in cluster.yaml
};

// Whether the cluster's link is emulated (docs/cluster.md): every node's and the
// orchestrator's port paced to link_gbps. Auto: paced when every node of a run runs the
// sim backend (modeled boards want a modeled wire; real boards have a real one).
enum class LinkEmulation { Auto, Paced, Off };

struct ClusterConfig {
  std::filesystem::path source;
  std::vector<NodeConfig> nodes;
  double link_gbps = ethernet::kLineRateGbps;
  // One way, added to every send when paced; by default the latency the planner prices a
  // transfer with (dpushard/perf/ethernet_link.hpp), so emulation and plan agree.
  double link_latency_us = ethernet::kOneWayLatencyMs * 1000;
  LinkEmulation link_emulation = LinkEmulation::Auto;
  std::filesystem::path token_file;  // resolved against the file's folder; empty: none
  std::string token;                 // its content
};

// Whether a run on nodes running `backends` (as they report them) paces the link.
bool link_is_paced(const ClusterConfig& cluster, const std::vector<std::string>& backends);

// Reads cluster.yaml. Errors are one line "FILE:LINE:COL: path.to.key: problem"
// (dpushard/yaml/yaml_reader.hpp).
ClusterConfig read_cluster_config(const std::filesystem::path& path);
ClusterConfig parse_cluster_config(const std::string& text, const std::string& origin,
                                   const std::filesystem::path& base_dir);

// What `run` does when a node is lost while frames stream (docs/cluster.md, "Losing a
// node"): fail (end the run naming the node and frame) or replan (go on with a plan for the
// surviving nodes, re-send the frames in flight, take the node back when it returns).
enum class OnNodeLoss { Fail, Replan };
std::string_view on_node_loss_name(OnNodeLoss policy);

// A plan and its folder (plan.yaml's fragments are read from there).
struct PlanOnNodes {
  Plan plan;
  std::filesystem::path dir;
};

// Makes the plan for the cluster nodes `nodes` (indices into ClusterConfig::nodes; plan slot
// i runs on nodes[i]) with the objective and targets of the run's plan. nullopt, with `why`
// set, when no plan serves them (none fits their memory). Supplied by the caller, so the
// cluster module needs no planner (docs/architecture.md).
using Replanner = std::function<std::optional<PlanOnNodes>(const std::vector<std::size_t>& nodes,
                                                           std::string& why)>;

// A node's counters for one job (its STATS answer), cumulative since the job loaded.
struct NodeCounters {
  std::uint64_t job = 0;
  double busy_s = 0;             // time its fragments spent computing
  std::uint64_t frames = 0;      // fragment runs
  std::uint64_t bytes_sent = 0;  // TENSOR frames it wrote to the network, headers included
};

struct RunOptions {
  std::int64_t frames = 16;
  int inflight = 2;
  std::uint64_t seed = 0;  // frame 0's inputs are those `dpushard exec --seed` uses
  std::string name = "orchestrator";
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds peer_timeout{3000};     // silence after which a node is dead
  std::chrono::milliseconds load_timeout{600000};   // uploads and fragment preparation
  std::chrono::milliseconds frame_timeout{600000};  // one frame in flight at most this long
  bool shutdown_workers = false;                    // send SHUTDOWN to every worker at the end
  // Keep the sha256 of every frame's outputs (frame f's inputs use seed + f % 4).
  bool hash_every_frame = false;
  // > 0: MLPerf LoadGen's Server scenario: frame f arrives at a time of a Poisson process of
  // this rate (exponential gaps, seeded by `seed`) and is sent then if fewer than `inflight`
  // frames are in flight (the workers' queues hold that many), else when one completes; its
  // latency counts from its arrival. 0: `inflight` frames in flight, the next sent when one
  // completes.
  double arrival_fps = 0;
  net::Limits limits;
  // Set (by a signal handler) to the number of a signal that asks the run to stop: the
  // orchestrator notices within 50 ms, unloads the job on every node (their frames in
  // flight are dropped) and returns the partial result marked interrupted.
  const std::atomic<int>* stop_signal = nullptr;
  OnNodeLoss on_node_loss = OnNodeLoss::Fail;
  Replanner replanner;  // required for OnNodeLoss::Replan
  // A lost node is called again after this, then twice as long each time, up to
  // rejoin_backoff_max, until it answers a new HELLO.
  std::chrono::milliseconds rejoin_backoff{250};
  std::chrono::milliseconds rejoin_backoff_max{1000};
  // Device errors (FRAME_ERROR device_failed) from one node before it counts as lost; the
  // ones before that re-send the frames in flight on the same nodes.
  int device_error_limit = 3;
  // Real inputs (`run --input`): frame f's tensors in the plan's model input order, asked
  // once per frame, in frame order, just before it is sent (the caller reads ahead). An
  // Error thrown means the frame cannot be read: it is skipped, frame_skipped gets the
  // message, and the others still run. Empty: seeded random inputs (seed + f % 4).
  std::function<std::vector<QTensor>(std::uint64_t frame)> frame_inputs;
  std::function<void(std::uint64_t frame, const std::string& error)> frame_skipped;
  // Each frame's outputs (plan output order, named), once, as the frame completes (in
  // completion order, not frame order).
  std::function<void(std::uint64_t frame, std::vector<QTensor> outputs)> frame_outputs;
  // An open-ended stream (`serve --cluster`): set, `frames` is ignored and frames are sent as
  // they come. frame_feed() says, without blocking, whether frame_inputs has the next frame
  // now (Waiting), not yet (Idle), or never again (Closed: the stream ends once the frames
  // in flight complete). on_streaming is called once every node has loaded the job, with a
  // thread-safe wake-up to call whenever frame_feed's answer changes (valid until
  // run_on_cluster returns).
  enum class Feed { Idle, Waiting, Closed };
  std::function<Feed()> frame_feed;
  std::function<void(std::function<void()> wake)> on_streaming;
  // Open-ended streams: every stats_interval each node of the plan that runs is asked for
  // its counters, handed to node_counters as they come (a plan switch starts a new job).
  std::chrono::milliseconds stats_interval{1000};
  std::function<void(const std::string& node, const NodeCounters& counters)> node_counters;
};

// One loss or return of a node while frames streamed (OnNodeLoss::Replan). Times are
// seconds from the stream's start; a duration is -1 when it did not happen (the run ended).
struct NodeEvent {
  enum class Kind { Loss, Return, DeviceError };
  Kind kind = Kind::Loss;
  std::string node;
  std::string cause;
  double detected_s = 0;  // when the orchestrator learnt of it
  double plan_ms = 0;     // the planner and reading its fragments (about 0 when prepared ahead)
  double upload_s = 0;    // sending the fragments the nodes lacked
  std::uint64_t upload_bytes = 0;
  std::uint64_t fragments_uploaded = 0;
  double switch_s = -1;       // detection to the new job loaded with its frames re-sent
  double first_frame_s = -1;  // detection to the first frame completed on the new plan
  double outage_s = -1;       // last completion before detection to that first frame
  std::int64_t frames_resent = 0;
  std::vector<std::string> nodes_after;  // the nodes of the plan run from then on
  std::string plan_after;                // its label ("experts", "hybrid 2x pipeline", ...)
  double predicted_fps_after = 0;        // its predicted throughput
  // Completed frames per second: from the previous event (or the start) to detection, from
  // detection to the first frame on the new plan, and from that frame to the next event
  // (or the end). 0 when the interval holds fewer than two completions.
  double fps_before = 0, fps_during = 0, fps_after = 0;
};

// Frames that could not be served (no plan fits the surviving nodes), each failed with
// `code`; first..last inclusive.
struct FailedFrames {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::string code;
  std::string message;
};

struct NodeResult {
  std::string name;
  std::string address;
  std::string backend;
  std::uint64_t dpu_fingerprint = 0;  // the node's DPU as its handshake reported it (0: none)
  std::uint32_t dpu_batch = 0;        // 0: not known
  // The batch its device's runners took for its fragments, from its LOADED (vart: VART's
  // runner input tensor's first dimension); 0 without a device.
  std::uint32_t runner_batch = 0;
  std::vector<std::string> fragments;
  std::uint64_t frames_computed = 0;  // fragment runs
  double busy_ms = 0;                 // time its backend spent computing
  double compute_cpu_ms = 0;          // CPU time of its compute threads inside the backend
  double cpu_ms = 0;                  // the worker process's CPU time while streaming
  double utilization = 0;             // busy time / streaming wall time
  std::uint64_t tensor_bytes_sent = 0;
  std::uint32_t max_queue = 0;
};

struct RunResult {
  bool complete = false;
  int interrupted_by = 0;   // the signal that stopped the run (RunOptions::stop_signal), or 0
  std::string error;        // why the run stopped, when it is not complete
  std::string failed_node;  // the node at fault, when known
  std::int64_t failed_frame = -1;
  std::int64_t frames_requested = 0;
  std::int64_t frames_completed = 0;
  std::int64_t frames_skipped = 0;  // inputs that could not be read (RunOptions::frame_inputs)
  int inflight = 0;
  double wall_s = 0;  // first input sent to last output received
  double throughput_fps = 0;
  // Completions after the first / time from the first to the last completion: the rate
  // once the pipeline is full, which is what a predicted fps means (throughput_fps also
  // counts the fill, the first frame's latency, against the frames).
  double steady_fps = 0;
  double latency_p50_ms = 0, latency_p90_ms = 0, latency_p99_ms = 0;
  double latency_mean_ms = 0, latency_min_ms = 0, latency_max_ms = 0;
  // The run's own spread (each 0 when too short to tell): the steady window's two halves'
  // rates apart, and the first and second half of the frames' median latencies apart, each
  // |a - b| / (a + b) (cluster/steady_rate.hpp).
  double steady_fps_spread = 0;
  double latency_p50_spread = 0;
  // TENSOR frames on the network per frame, headers included: inputs from the
  // orchestrator, tensors between nodes and outputs back.
  double wire_bytes_per_frame = 0;
  // The link of the run: "paced" (every port paced to link_gbps, plus link_latency_us one
  // way) or "off" (unshaped: as fast as the network between the processes).
  std::string link_emulation = "off";
  double link_gbps = 0;
  double link_latency_us = 0;
  double orchestrator_cpu_ms_per_frame = 0;  // the orchestrating process while streaming
  std::uint64_t upload_bytes = 0;            // fragment bytes sent (0 when every worker had them)
  std::uint64_t fragments_uploaded = 0;
  std::uint64_t fragments_cached = 0;
  // frame 0's outputs, in the plan's output order; "" for values a timing-only (sim)
  // node did not compute
  std::vector<std::string> output_sha256;
  std::vector<QTensor> first_outputs;                         // frame 0's outputs themselves
  std::vector<std::vector<std::string>> frame_output_sha256;  // with hash_every_frame
  // with hash_every_frame: the frames in the order they were delivered (each once, in order)
  std::vector<std::int64_t> delivery_order;
  std::string on_node_loss = "fail";
  double stream_start_unix_s = 0;  // when the first frame was sent (node_events count from it)
  std::vector<NodeEvent> node_events;
  std::vector<FailedFrames> failed_frames;
  std::int64_t frames_resent = 0;            // over every event
  std::uint64_t stale_messages_dropped = 0;  // from jobs a plan switch ended
  std::vector<NodeResult> nodes;
};

// Frames in one cycle of the plan's frame order: the nodes take frames in turn, so its
// completions repeat with this period and a rate is measured over whole cycles.
// replicate: sum(frame_share), or its copies; hybrid: its replicas (every fragment has one
// node per replica); 1 for experts and pipeline.
int frame_cycle(const Plan& plan);

// Runs `plan` (from folder `plan_dir`) on `cluster`. Problems with the plan or the cluster
// file throw dpushard::Error; anything that goes wrong once connecting starts (a refused
// token, a dead node, a failed frame) ends the run with complete = false and an error
// naming the node and, while streaming, the frame.
RunResult run_on_cluster(const Plan& plan, const std::filesystem::path& plan_dir,
                         const ClusterConfig& cluster, const RunOptions& options);

}  // namespace dpushard::cluster
