#pragma once
// The orchestrator's side of a run: one connection per node on an io thread, and the
// steps of a run driven from the calling thread through an inbox of node events. Any
// step that cannot go on throws RunFailure naming the node and, while streaming, the frame.

#include <atomic>
#include <future>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "dpushard/backend.hpp"
#include "dpushard/cluster.hpp"
#include "inbox.hpp"
#include "job_layout.hpp"
#include "net/connection.hpp"

namespace dpushard::cluster {

struct RunFailure {
  std::string node;
  std::int64_t frame = -1;
  std::string message;
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
  // Nodes with a DPU run the plan's compiled fragments (compiled_fragments.hpp); a fragment
  // compiled for another DPU fails the run here, before any upload.
  void choose_fragments(const Plan& plan, JobLayout& layout);
  void upload(const JobLayout& layout, RunResult& result);
  void load(const JobLayout& layout);
  void stream(const Plan& plan, const JobLayout& layout, RunResult& result);
  void collect_stats(const JobLayout& layout, RunResult& result);
  void finish();
  // After a stop signal: every connected node unloads the job (dropping its frames in
  // flight) and the connections close, waiting briefly for the goodbyes to be written.
  void cancel();
  // The stop signal that ended the run (RunOptions::stop_signal), or 0.
  int interrupted_by() const { return interrupted_by_; }
  // Throughput and latency percentiles of the frames completed so far.
  void summarize(RunResult& result) const;

 private:
  struct Link {
    const NodeConfig* config = nullptr;
    std::shared_ptr<net::Connection> connection;  // io thread only
    std::string backend;
    DeviceInfo device;  // as the worker reported it in AUTH_OK
  };
  struct Flight {
    Clock::time_point start;
    std::vector<bool> received;
    std::size_t count = 0;
  };

  template <class F>
  void on_io(F&& f) {
    net::asio::post(io_, std::forward<F>(f));
  }
  void send(std::size_t node, net::Message message);
  void send_frame(std::uint64_t frame, const JobLayout& layout,
                  const std::vector<std::shared_ptr<const QTensor>>& inputs);
  // The next event; closed connections, ERROR and FRAME_ERROR end the run.
  Event next(Clock::time_point deadline, const std::string& waiting_for);
  // The same for an event popped already (Server: waiting for an event or an arrival).
  Event checked(Event event);
  [[noreturn]] void fail(std::string node, const std::string& message);
  std::string describe(std::size_t node) const;
  std::size_t node_index(const std::string& name) const;

  const ClusterConfig& cluster_;
  const RunOptions& options_;
  net::ConnectionOptions connection_options_;
  net::LinkSpec link_;  // sent to every node in LOAD
  std::vector<Link> links_;
  net::asio::io_context io_;
  std::optional<net::asio::executor_work_guard<net::asio::io_context::executor_type>> work_;
  std::thread thread_;
  Inbox inbox_;
  std::shared_ptr<net::BufferPool> buffers_;
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
