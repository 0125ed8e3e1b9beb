#pragma once
// The orchestrator's side of a run: one connection per node on an io thread, and the
// steps of a run driven from the calling thread through an inbox of node events. Any
// step that cannot go on throws RunFailure naming the node and, while streaming, the frame.

#include <atomic>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/net/client.hpp"
#include "inbox.hpp"
#include "job_layout.hpp"

namespace dpushard::cluster {

struct RunFailure {
  std::string node;
  std::int64_t frame = -1;
  std::string message;
};

// A node lost while frames stream under OnNodeLoss::Replan (thrown by next() and caught by
// the stream, which switches to a plan for the others). `stays`: a device error below the
// limit; the node keeps its place and the frames in flight are re-sent. `rejoin`: the node
// is called again (false: lost to device errors; its worker still answers but its device
// fails, so it stays out for the rest of the run).
struct NodeLost {
  std::size_t link = 0;
  std::string cause;
  Clock::time_point at;
  bool stays = false;
  bool rejoin = true;
};

class Orchestrator {
 public:
  // Talks to the first `node_count` nodes of `cluster`.
  Orchestrator(const ClusterConfig& cluster, const RunOptions& options, int node_count);
  ~Orchestrator();
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  // Connects and authenticates; then decides the link (link_is_paced) and paces this
  // process's own port.
  void connect(RunResult& result);
  // The plan the run starts with (every node of the cluster slice); a return goes back to it.
  // `layout` as make_job_layout made it (before choose_fragments): kept for the return.
  void set_full_plan(const Plan& plan, const std::filesystem::path& dir, const JobLayout& layout);
  // Nodes with a DPU run the plan's compiled fragments (compiled_fragments.hpp); a fragment
  // compiled for another DPU fails the run here, before any upload.
  void choose_fragments(const Plan& plan, JobLayout& layout);
  struct UploadCount {
    std::uint64_t bytes = 0, uploaded = 0, cached = 0;
  };
  UploadCount upload(const JobLayout& layout);
  void load(const JobLayout& layout);
  void stream(const Plan& plan, std::shared_ptr<const JobLayout> layout, RunResult& result);
  void collect_stats(RunResult& result);
  void finish();
  // After a stop signal: every connected node unloads the job (dropping its frames in
  // flight) and the connections close, waiting briefly for the goodbyes to be written.
  void cancel();
  // The stop signal that ended the run (RunOptions::stop_signal), or 0.
  int interrupted_by() const { return interrupted_by_; }
  // Throughput and latency percentiles of the frames completed so far.
  void summarize(RunResult& result) const;

 private:
  // A node's place in the run (docs/cluster.md "Node states"): active (in the plan that
  // runs), lost (called again with back-off), returned (answered; joins at the next frame
  // boundary).
  enum class NodeState { kActive, kLost, kReturned };
  struct Link {
    const NodeConfig* config = nullptr;
    std::shared_ptr<net::Connection> connection;  // io thread only
    std::string backend;
    std::string worker_name;         // the name its worker gave at connect (CHALLENGE)
    std::string refusal;             // why its last new HELLO was not taken back (logged once)
    DeviceInfo device;               // as the worker reported it in AUTH_OK
    std::uint32_t runner_batch = 0;  // as the worker reported it in its last LOADED
    NodeState state = NodeState::kActive;
    // Bumped on every loss: events of an earlier connection are stale.
    std::uint32_t attempt = 0;
    int device_errors = 0;
    std::chrono::milliseconds backoff{0};                   // io thread only
    std::shared_ptr<net::asio::steady_timer> rejoin_timer;  // io thread only
    Clock::time_point returned_at{};
  };
  // A plan for some of the nodes and its job layout, or why there is none.
  struct Prepared {
    std::optional<PlanOnNodes> plan;
    std::string why;
    std::shared_ptr<const JobLayout> layout;
  };
  struct Flight {
    Clock::time_point start;
    std::vector<bool> received;
    std::size_t count = 0;
    // Real inputs (RunOptions::frame_inputs), kept until the frame completes: a plan switch
    // re-sends them. Empty: the seeded input set.
    std::vector<std::shared_ptr<const QTensor>> inputs;
    std::vector<QTensor> outputs;  // collected for RunOptions::frame_outputs
  };

  template <class F>
  void on_io(F&& f) {
    net::asio::post(io_, std::forward<F>(f));
  }
  void send(std::size_t node, net::Message message);
  // Sends frame f's inputs (its own, or input set f % 4) to the nodes of the plan that runs.
  void send_inputs(std::uint64_t frame);
  // Connects to link i and authenticates; the events carry `attempt`. A rejoin retries
  // with back-off instead of reporting a failure.
  void open_link(std::size_t i, std::uint32_t attempt, bool rejoin);  // io thread
  void schedule_rejoin(std::size_t i, std::uint32_t attempt);         // io thread
  // The next event; closed connections, ERROR and FRAME_ERROR end the run (with Replan
  // while streaming, a lost node throws NodeLost and stale events are skipped).
  Event next(Clock::time_point deadline, const std::string& waiting_for);
  Event next_from_inbox(Clock::time_point deadline, const std::string& waiting_for);
  // The same for an event popped already (Server: waiting for an event or an arrival).
  // nullopt: a stale event, or one the recovery consumed (a returning node).
  std::optional<Event> screened(Event event);
  Event checked(Event event);
  // --- recovery (orchestrator_recovery.cpp) ---
  // Marks the node lost, closes its connection and starts calling it again.
  void mark_lost(const NodeLost& lost);
  // Switches to a plan for the active nodes: a new job, the fragments they lack uploaded,
  // the frames in flight re-sent. A node lost meanwhile is dropped and the switch redone;
  // no plan for the nodes left fails every frame not yet completed (throws RunFailure).
  void switch_plan(std::size_t event_index);
  void recover(const NodeLost& lost);
  void readmit();  // every returned node joins; at a frame boundary
  // A lost node's new connection is not taken back (another worker name or backend at its
  // address): closed and called again later; `why` logged once per reason.
  void refuse_return(std::size_t node, const std::string& why);
  bool any_returned() const;
  void fail_unserved_frames(const std::string& why);
  // Fills each event's throughput before, during and after from the completion times.
  void measure_events(RunResult& result) const;
  std::vector<std::size_t> active_links() const;
  void prepare_ahead();
  Prepared make_prepared(const std::vector<std::size_t>& nodes) const;
  double since_start(Clock::time_point t) const;
  [[noreturn]] void fail(std::string node, const std::string& message);
  std::string describe(std::size_t node) const;
  std::size_t node_index(const std::string& name) const;

  const ClusterConfig& cluster_;
  const RunOptions& options_;
  bool replan_ = false;                // options_.on_node_loss == Replan
  bool streaming_ = false;             // losses are recovered from (Replan) once frames stream
  std::atomic<bool> rejoining_{true};  // false once the run ends: lost nodes are left alone
  // The plan that runs: its slots' links, its job layout; the full plan to return to.
  std::vector<std::size_t> slots_;
  std::shared_ptr<const JobLayout> layout_;
  std::optional<PlanOnNodes> full_plan_;
  std::optional<JobLayout> full_layout_;
  // Plans and job layouts for every node set but one, made while the first frames stream
  // so a first loss starts its switch at once (prepare_ahead()).
  std::map<std::vector<std::size_t>, std::shared_future<Prepared>> ahead_;
  std::set<std::uint64_t> retired_jobs_;  // jobs a plan switch ended: their messages are stale
  RunResult* result_ = nullptr;           // while streaming
  std::uint64_t frames_total_ = 0;
  std::uint64_t next_frame_ = 0;           // the next frame to launch
  std::optional<std::size_t> open_event_;  // index in result_->node_events awaiting a first frame
  Clock::time_point last_completion_{};
  double outage_from_s_ = 0;  // the last completion before the open event's detection
  // Without real inputs, a few distinct input sets, cycled (frame f uses seed + f % 4).
  std::vector<std::vector<std::shared_ptr<const QTensor>>> input_sets_;
  std::future<void> preparing_;  // waited for first thing in the destructor
  net::ConnectionOptions connection_options_;
  net::LinkSpec link_;  // sent to every node in LOAD
  std::vector<Link> links_;
  net::asio::io_context io_;
  std::optional<net::asio::executor_work_guard<net::asio::io_context::executor_type>> work_;
  std::thread thread_;
  Inbox inbox_;
  std::shared_ptr<net::BufferPool> buffers_;
  std::shared_ptr<spdlog::logger> log_;
  std::uint64_t job_ = 0;
  std::map<std::uint64_t, Flight> flights_;
  std::atomic<std::uint64_t> input_bytes_{0};
  std::vector<double> latencies_ms_;
  Clock::time_point stream_start_{};
  Clock::time_point stream_end_{};
  std::vector<Clock::time_point> completions_;  // in completion order
  int frame_cycle_ = 1;                         // frames per cycle of the plan's frame order
  std::uint64_t stream_cpu_ns_ = 0;
  int interrupted_by_ = 0;
};

}  // namespace dpushard::cluster
