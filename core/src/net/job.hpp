#pragma once
// One loaded plan on a worker: its fragments, where their outputs go, and the
// connections to the peers that consume them. Created by LOAD, ended by UNLOAD or when
// the orchestrator's connection closes.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fragment_runner.hpp"
#include "prepared_fragments.hpp"
#include "worker_context.hpp"

namespace dpushard::net {

class Job : public std::enable_shared_from_this<Job> {
 public:
  // `prepared`: fragments an earlier job of the same connection left loaded (may be null).
  Job(WorkerContext& ctx, Load load, std::shared_ptr<Connection> orchestrator,
      std::shared_ptr<PreparedFragments> prepared = nullptr);

  std::uint64_t id() const { return load_.job; }
  // Loads the fragments from the cache (on the compute pool), then connects to and
  // authenticates with every peer the routing needs. `done(code, error)` runs on the io
  // thread; error is empty on success.
  void start(std::function<void(ErrorCode code, const std::string& error)> done);
  // A tensor for one of this job's fragments, from the orchestrator, a peer or this
  // worker itself. Errors are reported to the orchestrator as FRAME_ERROR.
  void on_tensor(TensorMsg&& message);
  Stats stats() const;
  // Fragments taken loaded from the previous job of the connection (PreparedFragments).
  std::size_t reused_fragments() const { return reused_fragments_; }
  // The largest device runner batch of its fragments (LOADED's runner_batch; 0: no device).
  std::uint32_t runner_batch() const;
  // Drops the queued frames and closes the peer connections; idempotent. With
  // `keep_prepared`, the loaded fragments go to the connection's PreparedFragments for the
  // next job (one still computing a frame when that frame is done).
  // Returns how many queued inputs it dropped (frames that will not complete here).
  std::size_t close(bool keep_prepared = false);

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
  std::shared_ptr<PreparedFragments> prepared_;
  int threads_per_fragment_ = 1;
  std::size_t reused_fragments_ = 0;
  std::set<std::uint32_t> handing_over_;  // slots whose backend goes to prepared_ when done
  std::map<std::uint32_t, std::unique_ptr<FragmentRunner>> runners_;
  std::map<std::string, std::shared_ptr<Connection>> peers_;
  std::size_t peers_pending_ = 0;
  std::function<void(ErrorCode, const std::string&)> on_started_;
  bool closed_ = false;
  std::uint64_t tensor_bytes_sent_ = 0;
  std::optional<std::uint64_t> cpu_at_first_tensor_;  // process CPU time, ns
};

}  // namespace dpushard::net
