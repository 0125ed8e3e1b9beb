#pragma once
// The worker's side of one accepted connection: the handshake, then the messages its
// role allows (an orchestrator drives uploads, jobs and stats; a peer worker only sends
// tensors). A protocol violation drops this connection and nothing else.

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "fragment_cache.hpp"
#include "prepared_fragments.hpp"
#include "worker_context.hpp"

namespace dpushard::net {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(WorkerContext& ctx, std::shared_ptr<Connection> connection);

  // `on_ended` runs once on the io thread when the connection has closed.
  void start(std::function<void(const std::shared_ptr<Session>&)> on_ended);
  // Tells the peer the worker is stopping, then closes.
  void shut_down();

 private:
  void on_ready(const Hello& hello);
  void on_message(Message&& message);
  void on_closed(const std::string& reason);
  void require_orchestrator(const Message& message) const;
  void on_have(const HaveQuery& query);
  void on_upload(UploadChunk&& chunk);
  void on_load(Load&& load);
  void on_unload(std::uint64_t job, const char* cause);
  void on_tensor(TensorMsg&& message);
  void on_stats(std::uint64_t job);

  WorkerContext& ctx_;
  std::shared_ptr<Connection> connection_;
  std::function<void(const std::shared_ptr<Session>&)> on_ended_;
  PeerRole role_ = PeerRole::kOrchestrator;
  std::string peer_name_;
  std::map<Digest, std::unique_ptr<FragmentCache::Upload>> uploads_;
  std::set<std::uint64_t> jobs_;  // loaded through this connection
  // What a job ended by UNLOAD left loaded, for the next LOAD (a plan switch).
  std::shared_ptr<PreparedFragments> prepared_ = std::make_shared<PreparedFragments>();
  static constexpr std::chrono::milliseconds kHandoverPoll{2};
  static constexpr std::chrono::milliseconds kHandoverWait{1000};
  std::chrono::milliseconds load_waited_{0};
};

}  // namespace dpushard::net
