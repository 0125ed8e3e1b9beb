// A loaded plan on a worker: frames in, compute on the pool, outputs straight to their
// consumers.

#include "job.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/model_check.hpp"
#include "dpushard/net/cpu_time.hpp"
#include "dpushard/net/handshake.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "memory_headroom.hpp"

namespace dpushard::net {

Job::Job(WorkerContext& ctx, Load load, std::shared_ptr<Connection> orchestrator,
         std::shared_ptr<PreparedFragments> prepared)
    : ctx_(ctx),
      load_(std::move(load)),
      orchestrator_(std::move(orchestrator)),
      prepared_(std::move(prepared)) {}

namespace {

// Loading a fragment holds its file's bytes, the parsed graph and the backend's prepared
// copy of the weights at once: about three times the file. Under a memory limit too tight
// for that, the fragment is refused naming both sizes, before an allocation fails or the
// OOM killer ends the worker (docs/cluster.md, "Exhaustion").
constexpr std::uint64_t kLoadBytesPerFileByte = 3;

void refuse_fragments_that_cannot_fit(const FragmentAssignment& fragment,
                                      const std::filesystem::path& file) {
  std::error_code ec;
  const std::uint64_t file_bytes = std::filesystem::file_size(file, ec);
  if (ec) return;  // not cached: read_verified says so
  const auto headroom = memory_headroom();
  const std::uint64_t needed = file_bytes * kLoadBytesPerFileByte;
  if (!headroom || needed <= headroom->left_bytes) return;
  throw ProtocolError(ErrorCode::kBadFragment,
                      "fragment '" + fragment.name + "' needs about " + megabytes(needed) +
                          " to load (" + std::to_string(kLoadBytesPerFileByte) + " x its " +
                          megabytes(file_bytes) + " file), the worker has " +
                          megabytes(headroom->left_bytes) + " left under its memory limit (" +
                          headroom->limit + " " + megabytes(headroom->limit_bytes) + ")");
}

}  // namespace

void Job::start(std::function<void(ErrorCode, const std::string&)> done) {
  on_started_ = std::move(done);
  if (load_.inflight > ctx_.options.queue_capacity)
    return finish_start(ErrorCode::kQueueFull,
                        std::to_string(load_.inflight) +
                            " frames in flight exceed the worker's queue capacity of " +
                            std::to_string(ctx_.options.queue_capacity));
  const int per_fragment = std::max<int>(
      1, ctx_.options.threads / std::max<int>(1, static_cast<int>(load_.fragments.size())));
  threads_per_fragment_ = per_fragment;
  // Fragments the previous job of this connection left loaded (a plan switch) are reused.
  auto reused = std::make_shared<std::vector<std::optional<PreparedFragment>>>();
  for (const FragmentAssignment& fragment : load_.fragments)
    reused->push_back(prepared_ ? prepared_->take(fragment.sha, per_fragment) : std::nullopt);
  for (const auto& kept : *reused)
    if (kept) ++reused_fragments_;
  auto self = shared_from_this();
  // Parsing and preparing fragments can take seconds: never on the io thread.
  asio::post(ctx_.pool, [self, per_fragment, reused] {
    std::vector<std::unique_ptr<FragmentRunner>> runners;
    ErrorCode code = ErrorCode::kBadFragment;
    std::string error;
    try {
      for (std::size_t k = 0; k < self->load_.fragments.size(); ++k) {
        const FragmentAssignment& fragment = self->load_.fragments[k];
        if (auto& kept = (*reused)[k]) {
          runners.push_back(std::make_unique<FragmentRunner>(fragment, std::move(kept->backend),
                                                             std::move(kept->input_specs),
                                                             kept->output_count));
          continue;
        }
        refuse_fragments_that_cannot_fit(fragment, self->ctx_.cache.path_of(fragment.sha));
        const std::string bytes = self->ctx_.cache.read_verified(fragment.sha);
        const std::string origin =
            "fragment '" + fragment.name + "' (" + to_hex(fragment.sha) + ")";
        Graph graph;
        try {
          graph = parse_xmodel(bytes, origin);
          validate_loaded(graph);
        } catch (const Error& e) {
          // Bytes that are no model are refused for good: never kept under their hash.
          self->ctx_.cache.remove(fragment.sha);
          const std::string reason = e.what();
          throw ProtocolError(ErrorCode::kBadFragment,
                              reason.starts_with(origin) ? reason : origin + ": " + reason);
        }
        BackendOptions options = self->ctx_.options.backend_options;
        options.threads = per_fragment;
        auto backend = make_backend(self->ctx_.options.backend, options);
        backend->load(graph);
        runners.push_back(std::make_unique<FragmentRunner>(
            fragment, std::move(backend), input_specs(graph), graph.outputs().size()));
      }
    } catch (const ProtocolError& e) {
      code = e.code();
      error = e.what();
    } catch (const std::exception& e) {
      error = e.what();
    }
    asio::post(self->ctx_.io, [self, runners = std::move(runners), code, error]() mutable {
      self->on_fragments_loaded(std::move(runners), code, error);
    });
  });
}

std::uint32_t Job::runner_batch() const {
  std::uint32_t batch = 0;
  for (const auto& [slot, runner] : runners_) batch = std::max(batch, runner->runner_batch());
  return batch;
}

void Job::on_fragments_loaded(std::vector<std::unique_ptr<FragmentRunner>> runners, ErrorCode code,
                              const std::string& error) {
  if (closed_) return;
  if (!error.empty()) return finish_start(code, error);
  for (auto& runner : runners) {
    const std::uint32_t slot = runner->assignment().slot;
    if (!runners_.emplace(slot, std::move(runner)).second)
      return finish_start(ErrorCode::kMalformed,
                          "fragment slot " + std::to_string(slot) + " is assigned twice");
  }
  connect_peers();
}

void Job::connect_peers() {
  std::set<std::string> needed;
  for (const auto& [slot, runner] : runners_)
    for (const auto& destinations : runner->assignment().outputs)
      for (const Destination& d : destinations)
        for (const Target& t : d.replicas)
          if (t.slot != kOrchestratorSlot && t.node != load_.node) needed.insert(t.node);
  peers_pending_ = needed.size();
  if (needed.empty()) return finish_start(ErrorCode::kInternal, "");
  for (const std::string& node : needed) {
    const auto peer = std::find_if(load_.peers.begin(), load_.peers.end(),
                                   [&](const PeerAddress& p) { return p.name == node; });
    if (peer == load_.peers.end())
      return finish_start(ErrorCode::kMalformed,
                          "the routing names node '" + node + "' but LOAD gives no address for it");
    auto self = shared_from_this();
    const std::string address = peer->address;
    async_connect_to(
        ctx_.io, address, ctx_.options.connect_timeout,
        [self, node, address](const std::string& error, tcp::socket socket) {
          if (self->closed_) return;
          if (!error.empty())
            return self->finish_start(ErrorCode::kPeerLost, "node '" + node + "': " + error);
          auto connection =
              Connection::create(std::move(socket), self->ctx_.connection,
                                 "peer " + node + " (" + address + ")", self->ctx_.buffers);
          start_client_handshake(
              connection,
              ClientIdentity{self->load_.node, PeerRole::kWorker, self->ctx_.options.token},
              [self, node, address, connection](const std::string& failure, const AuthOk&) {
                if (self->closed_) return connection->close("job closed");
                if (!failure.empty())
                  return self->finish_start(ErrorCode::kPeerLost,
                                            "node '" + node + "' (" + address + "): " + failure);
                self->on_peer_ready(node, connection);
              });
        });
  }
}

void Job::on_peer_ready(const std::string& node, const std::shared_ptr<Connection>& connection) {
  std::weak_ptr<Job> weak = shared_from_this();
  std::weak_ptr<Connection> weak_connection = connection;
  connection->set_message_handler([weak_connection](Message&& message) {
    if (std::holds_alternative<Heartbeat>(message)) return;
    auto conn = weak_connection.lock();
    if (const auto* error = std::get_if<ErrorMsg>(&message)) {
      if (conn)
        conn->close("peer sent ERROR " + std::string(error_code_name(error->code)) + ": " +
                    error->message);
      return;
    }
    throw ProtocolError(ErrorCode::kUnexpectedMessage,
                        std::string(message_type_name(type_of(message))) +
                            " on a connection that only carries tensors to the peer");
  });
  connection->set_close_handler([weak, node](const std::string& reason) {
    auto self = weak.lock();
    if (!self || self->closed_) return;
    self->report(kNoFrame, ErrorCode::kPeerLost, node,
                 "connection to node '" + node + "' lost: " + reason);
  });
  peers_[node] = connection;
  if (--peers_pending_ == 0) finish_start(ErrorCode::kInternal, "");
}

void Job::finish_start(ErrorCode code, const std::string& error) {
  if (!on_started_) return;
  auto done = std::move(on_started_);
  on_started_ = nullptr;
  done(code, error);
}

void Job::on_tensor(TensorMsg&& message) {
  if (closed_) return;
  if (!cpu_at_first_tensor_) cpu_at_first_tensor_ = process_cpu_ns();
  const std::uint64_t frame = message.frame;
  auto it = runners_.find(message.slot);
  if (it == runners_.end())
    return report(
        frame, ErrorCode::kMalformed, load_.node,
        "node '" + load_.node + "' holds no fragment slot " + std::to_string(message.slot));
  FragmentRunner& runner = *it->second;
  try {
    runner.accept(frame, message.index, std::move(message.tensor), load_.inflight);
  } catch (const ProtocolError& e) {
    runner.forget(frame);
    return report(frame, e.code(), load_.node, e.what());
  }
  pump(runner);
}

void Job::pump(FragmentRunner& runner) {
  if (!runner.can_start()) return;
  auto [frame, inputs, ready] = runner.take_ready();
  auto self = shared_from_this();
  FragmentRunner* target = &runner;
  asio::post(ctx_.pool, [self, target, frame = frame, inputs = std::move(inputs),
                         ready = ready]() mutable {
    const auto start = std::chrono::steady_clock::now();
    const std::uint64_t cpu_start = thread_cpu_ns();
    std::vector<QTensor> outputs;
    std::string error;
    ErrorCode code = ErrorCode::kComputeFailed;
    try {
      outputs = target->run(inputs, ready, *self->ctx_.buffers);
    } catch (const DeviceError& e) {
      code = ErrorCode::kDeviceFailed;
      error = e.what();
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown failure";
    }
    // Values computed from values that were not (a sim node upstream) are not real either.
    if (!std::all_of(inputs.begin(), inputs.end(), [](const QTensor& t) { return t.computed; }))
      for (QTensor& output : outputs) output.computed = false;
    const auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start);
    const std::uint64_t cpu = thread_cpu_ns() - cpu_start;
    for (QTensor& input : inputs) self->ctx_.buffers->give(std::move(input.data));
    asio::post(self->ctx_.io, [self, target, frame, outputs = std::move(outputs), error, code,
                               busy_ns = static_cast<std::uint64_t>(busy.count()), cpu]() mutable {
      self->on_computed(*target, frame, std::move(outputs), code, error, busy_ns, cpu);
    });
  });
}

void Job::on_computed(FragmentRunner& runner, std::uint64_t frame, std::vector<QTensor> outputs,
                      ErrorCode code, const std::string& error, std::uint64_t busy_ns,
                      std::uint64_t cpu_ns) {
  runner.finished(busy_ns, cpu_ns);
  ctx_.counters.frames_computed.fetch_add(1, std::memory_order_relaxed);
  if (closed_) {
    if (handing_over_.erase(runner.assignment().slot) != 0)
      prepared_->deliver(runner.assignment().sha, runner.release(threads_per_fragment_));
    return;
  }
  if (!error.empty())
    report(frame, code, load_.node,
           "fragment '" + runner.name() + "' frame " + std::to_string(frame) + ": " + error);
  else
    route(runner, frame, std::move(outputs));
  pump(runner);
}

void Job::route(const FragmentRunner& runner, std::uint64_t frame, std::vector<QTensor> outputs) {
  const auto& routing = runner.assignment().outputs;
  if (outputs.size() != routing.size())
    return report(frame, ErrorCode::kComputeFailed, load_.node,
                  "fragment '" + runner.name() + "' produced " + std::to_string(outputs.size()) +
                      " outputs, expected " + std::to_string(routing.size()));
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& destinations = routing[i];
    // A tensor consumed only here moves on without a copy; one sent anywhere else is
    // shared by every send and written straight from the backend's buffer.
    if (destinations.size() == 1) {
      const Target& only = destinations[0].target_for(frame);
      if (only.slot != kOrchestratorSlot && only.node == load_.node) {
        on_tensor(
            TensorMsg{load_.job, frame, only.slot, destinations[0].index, std::move(outputs[i])});
        continue;
      }
    }
    auto shared = std::make_shared<const QTensor>(std::move(outputs[i]));
    for (const Destination& d : destinations) {
      const Target& target = d.target_for(frame);
      std::shared_ptr<Connection> connection;
      if (target.slot == kOrchestratorSlot) {
        connection = orchestrator_;
      } else if (target.node == load_.node) {
        on_tensor(TensorMsg{load_.job, frame, target.slot, d.index, pooled_copy(*shared)});
        continue;
      } else {
        connection = peers_.at(target.node);
      }
      tensor_bytes_sent_ += connection->send_tensor(load_.job, frame, target.slot, d.index, shared);
    }
  }
}

QTensor Job::pooled_copy(const QTensor& tensor) {
  QTensor copy;
  copy.name = tensor.name;
  copy.shape = tensor.shape;
  copy.fix_point = tensor.fix_point;
  copy.computed = tensor.computed;
  copy.data = ctx_.buffers->take(tensor.data.size());
  std::copy(tensor.data.begin(), tensor.data.end(), copy.data.begin());
  return copy;
}

void Job::report(std::uint64_t frame, ErrorCode code, const std::string& node,
                 const std::string& message) {
  ctx_.log->warn("event=frame_error job={:016x} frame={} code={} node={} message=\"{}\"", load_.job,
                 frame == kNoFrame ? -1 : static_cast<long long>(frame), error_code_name(code),
                 node, message);
  orchestrator_->send(FrameError{load_.job, frame, code, node, message});
}

Stats Job::stats() const {
  Stats stats;
  stats.job = load_.job;
  for (const auto& [slot, runner] : runners_) stats.fragments.push_back(runner->stats());
  stats.tensor_bytes_sent = tensor_bytes_sent_;
  stats.upload_bytes_received = ctx_.counters.upload_bytes_received.load();
  if (cpu_at_first_tensor_) stats.cpu_ns = process_cpu_ns() - *cpu_at_first_tensor_;
  return stats;
}

std::size_t Job::close(bool keep_prepared) {
  if (closed_) return 0;
  closed_ = true;
  std::size_t dropped = 0;
  for (auto& [slot, runner] : runners_) {
    for (QTensor& tensor : runner->drain()) {
      ctx_.buffers->give(std::move(tensor.data));
      ++dropped;
    }
    if (!keep_prepared || !prepared_) continue;
    if (!runner->running()) {
      prepared_->keep(runner->assignment().sha, runner->release(threads_per_fragment_));
    } else {  // its backend is busy on the pool: handed on in on_computed
      prepared_->expect();
      handing_over_.insert(slot);
    }
  }
  for (auto& [node, connection] : peers_) connection->close_after_flush("job finished");
  peers_.clear();
  on_started_ = nullptr;
  return dropped;
}

}  // namespace dpushard::net
