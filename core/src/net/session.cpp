// One accepted connection on a worker.

#include "session.hpp"

#include <string_view>

#include "dpushard/base/sha256.hpp"
#include "dpushard/net/handshake.hpp"
#include "job.hpp"

namespace dpushard::net {

Session::Session(WorkerContext& ctx, std::shared_ptr<Connection> connection)
    : ctx_(ctx), connection_(std::move(connection)) {}

void Session::start(std::function<void(const std::shared_ptr<Session>&)> on_ended) {
  on_ended_ = std::move(on_ended);
  std::weak_ptr<Session> weak = shared_from_this();
  start_server_handshake(
      connection_,
      ServerIdentity{ctx_.name, ctx_.options.backend, ctx_.options.token,
                     ctx_.options.device.value_or(DeviceInfo{})},
      [weak](const Hello& hello) {
        if (auto self = weak.lock()) self->on_ready(hello);
      },
      [weak](const std::string& reason) {
        if (auto self = weak.lock()) self->on_closed(reason);
      });
}

void Session::shut_down() { connection_->fail(ErrorCode::kShuttingDown, "the worker is stopping"); }

void Session::on_ready(const Hello& hello) {
  role_ = hello.role;
  peer_name_ = hello.name;
  const char* role = role_ == PeerRole::kOrchestrator ? "orchestrator" : "worker";
  connection_->set_label(std::string(role) + " '" + peer_name_ + "' (" +
                         connection_->remote_endpoint() + ")");
  ctx_.log->info("event=authenticated peer=\"{}\" role={} remote={}", peer_name_, role,
                 connection_->remote_endpoint());
  std::weak_ptr<Session> weak = shared_from_this();
  connection_->set_message_handler([weak](Message&& message) {
    if (auto self = weak.lock()) self->on_message(std::move(message));
  });
}

void Session::require_orchestrator(const Message& message) const {
  if (role_ != PeerRole::kOrchestrator)
    throw ProtocolError(ErrorCode::kUnexpectedMessage,
                        std::string(message_type_name(type_of(message))) +
                            " from a worker peer, which may only send tensors");
}

void Session::on_message(Message&& message) {
  if (std::holds_alternative<Heartbeat>(message)) return;
  if (auto* tensor = std::get_if<TensorMsg>(&message)) return on_tensor(std::move(*tensor));
  if (const auto* error = std::get_if<ErrorMsg>(&message))
    return connection_->close("peer sent ERROR " + std::string(error_code_name(error->code)) +
                              ": " + error->message);
  require_orchestrator(message);
  if (const auto* query = std::get_if<HaveQuery>(&message)) return on_have(*query);
  if (auto* chunk = std::get_if<UploadChunk>(&message)) return on_upload(std::move(*chunk));
  if (auto* load = std::get_if<Load>(&message)) return on_load(std::move(*load));
  if (const auto* unload = std::get_if<Unload>(&message)) return on_unload(unload->job, "UNLOAD");
  if (const auto* request = std::get_if<StatsRequest>(&message)) return on_stats(request->job);
  if (std::holds_alternative<Shutdown>(message)) {
    ctx_.log->info("event=shutdown_requested by=\"{}\"", peer_name_);
    return ctx_.request_stop("SHUTDOWN from '" + peer_name_ + "'");
  }
  throw ProtocolError(ErrorCode::kUnexpectedMessage,
                      std::string(message_type_name(type_of(message))) + " sent to a worker");
}

void Session::on_have(const HaveQuery& query) {
  HaveReply reply;
  reply.have.reserve(query.hashes.size());
  for (const Digest& sha : query.hashes) reply.have.push_back(ctx_.cache.has(sha) ? 1 : 0);
  connection_->send(reply);
}

void Session::on_upload(UploadChunk&& chunk) {
  auto it = uploads_.find(chunk.sha);
  if (it == uploads_.end()) {
    if (chunk.offset != 0)
      throw ProtocolError(
          ErrorCode::kMalformed,
          "upload of " + to_hex(chunk.sha) + " starts at offset " + std::to_string(chunk.offset));
    it = uploads_
             .emplace(chunk.sha, std::make_unique<FragmentCache::Upload>(ctx_.cache, chunk.sha,
                                                                         chunk.total_bytes))
             .first;
  } else if (it->second->total_bytes() != chunk.total_bytes) {
    throw ProtocolError(ErrorCode::kMalformed,
                        "upload of " + to_hex(chunk.sha) + " changed its size");
  }
  ctx_.counters.upload_bytes_received.fetch_add(chunk.bytes.size(), std::memory_order_relaxed);
  bool complete = false;
  try {
    complete = it->second->append(chunk.offset, chunk.bytes);
  } catch (const ProtocolError&) {
    uploads_.erase(it);
    throw;
  }
  ctx_.buffers->give(std::move(chunk.bytes));
  if (!complete) return;
  uploads_.erase(it);
  ctx_.counters.fragments_stored.fetch_add(1, std::memory_order_relaxed);
  ctx_.log->info("event=fragment_stored sha256={} from=\"{}\"", to_hex(chunk.sha), peer_name_);
  connection_->send(UploadDone{chunk.sha});
}

void Session::on_load(Load&& load) {
  // A fragment of the job just unloaded may still be computing its last frame (one
  // frame's time): the LOAD waits for it, so it can be reused, up to kHandoverWait.
  if (prepared_->pending() > 0 && load_waited_ < kHandoverWait) {
    load_waited_ += kHandoverPoll;
    auto timer = std::make_shared<asio::steady_timer>(ctx_.io, kHandoverPoll);
    std::weak_ptr<Session> weak = shared_from_this();
    timer->async_wait(
        [weak, timer, load = std::move(load)](const boost::system::error_code&) mutable {
          if (auto self = weak.lock()) self->on_load(std::move(load));
        });
    return;
  }
  load_waited_ = {};
  const std::uint64_t id = load.job;
  if (ctx_.jobs.count(id) != 0)
    return connection_->send(
        FrameError{id, kNoFrame, ErrorCode::kMalformed, load.node, "job id already in use"});
  ctx_.log->info("event=load job={:016x} node=\"{}\" fragments={} inflight={}", id, load.node,
                 load.fragments.size(), load.inflight);
  const std::string node = load.node;
  // The job's link: this node's port paces everything it sends and receives from now on
  // (the worker serves one cluster at a time; the latest job's link applies).
  ctx_.port->configure(
      LinkSpec{load.link_bits_per_s, std::chrono::microseconds(load.link_latency_us)});
  if (load.link_bits_per_s > 0)
    ctx_.log->info("event=link_paced job={:016x} bits_per_s={} latency_us={}", id,
                   load.link_bits_per_s, load.link_latency_us);
  auto job = std::make_shared<Job>(ctx_, std::move(load), connection_, prepared_);
  ctx_.jobs[id] = job;
  jobs_.insert(id);
  std::weak_ptr<Session> weak = shared_from_this();
  std::weak_ptr<Job> weak_job = job;
  job->start([weak, weak_job, id, node](ErrorCode code, const std::string& error) {
    auto self = weak.lock();
    if (!self) return;
    self->prepared_->clear();  // the job took what it reuses
    if (error.empty()) {
      const auto started = weak_job.lock();
      const std::uint32_t batch = started ? started->runner_batch() : 0;
      self->ctx_.log->info("event=loaded job={:016x} reused_fragments={} runner_batch={}", id,
                           started ? started->reused_fragments() : 0, batch);
      return self->connection_->send(Loaded{id, batch});
    }
    self->ctx_.log->warn("event=load_failed job={:016x} code={} error=\"{}\"", id,
                         error_code_name(code), error);
    self->connection_->send(FrameError{id, kNoFrame, code, node, error});
    self->on_unload(id, "load failed");
  });
}

void Session::on_unload(std::uint64_t id, const char* cause) {
  auto it = ctx_.jobs.find(id);
  if (it == ctx_.jobs.end() || jobs_.count(id) == 0) return;  // already gone: nothing to do
  // Ended by UNLOAD, the orchestrator may load a job that runs the same fragments next.
  const bool keep = std::string_view(cause) == "UNLOAD";
  const std::size_t dropped = it->second->close(keep);
  ctx_.log->info("event=unloaded job={:016x} cause=\"{}\" queued_inputs_dropped={}", id, cause,
                 dropped);
  ctx_.jobs.erase(it);
  jobs_.erase(id);
  // An idle worker holds no tensor buffers (the next job may want other sizes) and no
  // emulated link (the next job brings its own).
  if (ctx_.jobs.empty()) {
    ctx_.buffers->release();
    ctx_.port->configure(LinkSpec{});
  }
}

void Session::on_tensor(TensorMsg&& message) {
  auto it = ctx_.jobs.find(message.job);
  if (it == ctx_.jobs.end()) {
    // A peer's tensor may trail behind the end of its job; an orchestrator's may not.
    if (role_ == PeerRole::kOrchestrator)
      connection_->send(FrameError{message.job, message.frame, ErrorCode::kNoSuchJob, ctx_.name,
                                   "no job " + std::to_string(message.job)});
    ctx_.buffers->give(std::move(message.tensor.data));
    return;
  }
  it->second->on_tensor(std::move(message));
}

void Session::on_stats(std::uint64_t id) {
  auto it = ctx_.jobs.find(id);
  if (it == ctx_.jobs.end())
    return connection_->send(
        FrameError{id, kNoFrame, ErrorCode::kNoSuchJob, ctx_.name, "no job " + std::to_string(id)});
  connection_->send(it->second->stats());
}

void Session::on_closed(const std::string& reason) {
  for (std::uint64_t id : std::set<std::uint64_t>(jobs_)) on_unload(id, "connection closed");
  prepared_->clear();
  uploads_.clear();
  const auto sent = connection_->sent_error();
  if (sent && *sent != ErrorCode::kShuttingDown) {
    ctx_.counters.sessions_dropped.fetch_add(1, std::memory_order_relaxed);
    ctx_.log->warn("event=peer_dropped peer=\"{}\" reason=\"{}\"", connection_->label(), reason);
  } else {
    ctx_.log->info("event=peer_closed peer=\"{}\" reason=\"{}\"", connection_->label(), reason);
  }
  if (on_ended_) {
    auto done = std::move(on_ended_);
    on_ended_ = nullptr;
    done(shared_from_this());
  }
}

}  // namespace dpushard::net
