#pragma once
// One loaded plan on a worker: its fragments, where their outputs go, and the
// connections to the peers that consume them. Created by LOAD, ended by UNLOAD or when
// the orchestrator's connection closes.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fragment_runner.hpp"
#include "worker_context.hpp"

namespace dpushard::net {

class Job : public std::enable_shared_from_this<Job> {
 public:
  Job(WorkerContext& ctx, Load load, std::shared_ptr<Connection> orchestrator);

  std::uint64_t id() const { return load_.job; }
  // Loads the fragments from the cache (on the compute pool), then connects to and
  // authenticates with every peer the routing needs. `done(code, error)` runs on the io
  // thread; error is empty on success.
  void start(std::function<void(ErrorCode code, const std::string& error)> done);
  // A tensor for one of this job's fragments, from the orchestrator, a peer or this
  // worker itself. Errors are reported to the orchestrator as FRAME_ERROR.
  void on_tensor(TensorMsg&& message);
  Stats stats() const;
  // Drops the queued frames and closes the peer connections; idempotent.
  // Returns how many queued inputs it dropped (frames that will not complete here).
  std::size_t close();

 private:
  void on_fragments_loaded(std::vector<std::unique_ptr<FragmentRunner>> runners, ErrorCode code,
                           const std::string& error);
  void connect_peers();
  void on_peer_ready(const std::string& node, const std::shared_ptr<Connection>& connection);
  void finish_start(ErrorCode code, const std::string& error);
  void pump(FragmentRunner& runner);
  void on_computed(FragmentRunner& runner, std::uint64_t frame, std::vector<QTensor> outputs,
                   ErrorCode code, const std::string& error, std::uint64_t busy_ns,
                   std::uint64_t cpu_ns);
  void route(const FragmentRunner& runner, std::uint64_t frame, std::vector<QTensor> outputs);
  // A copy for a fragment on this worker, in a buffer the pool gets back after compute.
  QTensor pooled_copy(const QTensor& tensor);
  void report(std::uint64_t frame, ErrorCode code, const std::string& node,
              const std::string& message);

  WorkerContext& ctx_;
  Load load_;
  std::shared_ptr<Connection> orchestrator_;
  std::map<std::uint32_t, std::unique_ptr<FragmentRunner>> runners_;
  std::map<std::string, std::shared_ptr<Connection>> peers_;
  std::size_t peers_pending_ = 0;
  std::function<void(ErrorCode, const std::string&)> on_started_;
  bool closed_ = false;
  std::uint64_t tensor_bytes_sent_ = 0;
  std::optional<std::uint64_t> cpu_at_first_tensor_;  // process CPU time, ns
};

}  // namespace dpushard::net
