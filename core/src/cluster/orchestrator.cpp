// The orchestrator: connect, upload what is missing, load, stream, collect, finish.

#include "orchestrator.hpp"
#include "steady_rate.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <thread>

#include "compiled_fragments.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/net/client.hpp"

namespace dpushard::cluster {

namespace {

constexpr std::size_t kUploadChunk = std::size_t{4} << 20;
constexpr auto kStatsTimeout = std::chrono::seconds(10);
constexpr auto kGoodbyeTimeout = std::chrono::seconds(2);
constexpr auto kStopPoll = std::chrono::milliseconds(50);

std::string frames_text(std::uint64_t first, std::uint64_t last) {
  return first == last ? "frame " + std::to_string(first)
                       : "frames " + std::to_string(first) + "-" + std::to_string(last);
}

// Real inputs as the plan takes them: one per model input, of its shape and fix point.
std::vector<std::shared_ptr<const QTensor>> checked_inputs(const Plan& plan,
                                                           std::vector<QTensor> inputs) {
  if (inputs.size() != plan.model_inputs.size())
    throw Error("the plan takes " + std::to_string(plan.model_inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  std::vector<std::shared_ptr<const QTensor>> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const PlanTensor& want = plan.model_inputs[i];
    if (inputs[i].shape != want.shape || inputs[i].fix_point != want.fix_point)
      throw Error("input '" + want.name + "' is " + shape_text(inputs[i].shape) + " fix_point " +
                  std::to_string(inputs[i].fix_point) + ", the plan takes " +
                  shape_text(want.shape) + " fix_point " + std::to_string(want.fix_point));
    inputs[i].name = want.name;
    out.push_back(std::make_shared<const QTensor>(std::move(inputs[i])));
  }
  return out;
}

}  // namespace

Orchestrator::Orchestrator(const ClusterConfig& cluster, const RunOptions& options, int node_count)
    : cluster_(cluster),
      options_(options),
      buffers_(std::make_shared<net::BufferPool>()),
      log_(net::make_logger("orchestrator")) {
  connection_options_.limits = options.limits;
  connection_options_.heartbeat_interval = options.heartbeat_interval;
  connection_options_.peer_timeout = options.peer_timeout;
  connection_options_.handshake_timeout = options.connect_timeout;
  connection_options_.port = std::make_shared<net::PortShaper>();
  replan_ = options.on_node_loss == OnNodeLoss::Replan;
  for (int i = 0; i < node_count; ++i) {
    Link link;
    link.config = &cluster.nodes[static_cast<std::size_t>(i)];
    links_.push_back(std::move(link));
    slots_.push_back(static_cast<std::size_t>(i));
  }
  const net::Digest random = net::random_nonce();
  std::memcpy(&job_, random.data(), sizeof job_);
  work_.emplace(io_.get_executor());
  thread_ = std::thread([this] { io_.run(); });
}

Orchestrator::~Orchestrator() {
  // The plans made ahead read links_ and options_, members that go before preparing_ does:
  // a short stream (a serve shut down at once) must not end while they are being made.
  if (preparing_.valid()) preparing_.wait();
  rejoining_ = false;
  on_io([this] {
    for (Link& link : links_) {
      if (link.rejoin_timer) link.rejoin_timer->cancel();
      if (link.connection) link.connection->close("run over");
    }
  });
  on_io([this] { io_.stop(); });
  work_.reset();
  thread_.join();
}

std::string Orchestrator::describe(std::size_t node) const {
  return "node '" + links_[node].config->name + "' (" + links_[node].config->address + ")";
}

std::size_t Orchestrator::node_index(const std::string& name) const {
  for (std::size_t i = 0; i < links_.size(); ++i)
    if (links_[i].config->name == name) return i;
  return links_.size();
}

void Orchestrator::fail(std::string node, const std::string& message) {
  RunFailure failure{std::move(node), -1, message};
  if (!flights_.empty()) {
    failure.frame = static_cast<std::int64_t>(flights_.begin()->first);
    failure.message +=
        " (" + frames_text(flights_.begin()->first, flights_.rbegin()->first) + " in flight)";
  }
  throw failure;
}

Event Orchestrator::next(Clock::time_point deadline, const std::string& waiting_for) {
  for (;;) {
    if (std::optional<Event> kept = screened(next_from_inbox(deadline, waiting_for)))
      return checked(std::move(*kept));
  }
}

// An event that is not a wake-up (which only matters to the stream's own wait: the stream
// asks its feed anyway). Waits in short steps so a stop signal is noticed while the nodes
// are silent.
Event Orchestrator::next_from_inbox(Clock::time_point deadline, const std::string& waiting_for) {
  for (;;) {
    if (options_.stop_signal != nullptr && options_.stop_signal->load() != 0) {
      interrupted_by_ = options_.stop_signal->load();
      fail("", std::string("interrupted by ") + (interrupted_by_ == SIGINT ? "SIGINT" : "SIGTERM") +
                   " while waiting for " + waiting_for);
    }
    const auto now = Clock::now();
    if (now >= deadline) fail("", "timed out waiting for " + waiting_for);
    if (std::optional<Event> event = inbox_.pop(std::min(deadline, now + kStopPoll));
        event && event->kind != Event::Kind::kWake)
      return std::move(*event);
  }
}

Event Orchestrator::checked(Event popped) {
  std::optional<Event> event = std::move(popped);
  const std::size_t node = event->node;
  const std::string& name = links_[node].config->name;
  const std::string during =
      flights_.empty() ? std::string() : " during frame " + std::to_string(flights_.begin()->first);
  if (event->kind == Event::Kind::kClosed)
    fail(name, describe(node) + " lost" + during + ": " + event->text);
  if (const auto* error = std::get_if<net::ErrorMsg>(&event->message))
    fail(name, describe(node) + " refused" + during + ": " +
                   std::string(net::error_code_name(error->code)) + ": " + error->message);
  if (const auto* error = std::get_if<net::FrameError>(&event->message)) {
    // A worker may report a peer of its own (a lost connection): that peer is at fault.
    const std::size_t at_fault = node_index(error->node);
    const std::string culprit = at_fault < links_.size() ? error->node : name;
    std::string message = "node '" + culprit + "'";
    if (at_fault < links_.size()) message = describe(at_fault);
    if (error->frame != net::kNoFrame) {
      RunFailure failure{culprit, static_cast<std::int64_t>(error->frame),
                         message + " failed frame " + std::to_string(error->frame) + ": " +
                             std::string(net::error_code_name(error->code)) + ": " +
                             error->message +
                             (culprit != name ? " (reported by '" + name + "')" : "")};
      throw failure;
    }
    fail(culprit, message + " failed" + during + ": " +
                      std::string(net::error_code_name(error->code)) + ": " + error->message +
                      (culprit != name ? " (reported by '" + name + "')" : ""));
  }
  return std::move(*event);
}

void Orchestrator::send(std::size_t node, net::Message message) {
  on_io([this, node, message = std::move(message)] {
    if (links_[node].connection) links_[node].connection->send(message);
  });
}

// --- connect -----------------------------------------------------------------------------
bool link_is_paced(const ClusterConfig& cluster, const std::vector<std::string>& backends) {
  switch (cluster.link_emulation) {
    case LinkEmulation::Paced:
      return true;
    case LinkEmulation::Off:
      return false;
    case LinkEmulation::Auto:
      break;
  }
  return !backends.empty() && std::all_of(backends.begin(), backends.end(), [](const auto& b) {
    const auto descriptor = find_backend(b);
    return descriptor && descriptor->traits.models_time;
  });
}

void Orchestrator::open_link(std::size_t i, std::uint32_t attempt, bool rejoin) {
  net::async_connect_to(
      io_, links_[i].config->address, options_.connect_timeout,
      [this, i, attempt, rejoin](const std::string& error, net::tcp::socket socket) {
        if (rejoin && !rejoining_) return;
        if (!error.empty()) {
          if (rejoin) return schedule_rejoin(i, attempt);
          return inbox_.push(Event{i, Event::Kind::kClosed, {}, error, Clock::now(), {}, attempt});
        }
        auto connection =
            net::Connection::create(std::move(socket), connection_options_, describe(i), buffers_);
        links_[i].connection = connection;
        net::start_client_handshake(
            connection,
            net::ClientIdentity{options_.name, net::PeerRole::kOrchestrator, cluster_.token},
            [this, i, attempt, rejoin, connection](const std::string& failure,
                                                   const net::AuthOk& worker,
                                                   const std::string& worker_name) {
              if (!failure.empty()) {
                if (rejoin) return schedule_rejoin(i, attempt);
                return inbox_.push(
                    Event{i, Event::Kind::kClosed, {}, failure, Clock::now(), {}, attempt});
              }
              connection->set_message_handler([this, i, attempt](net::Message&& message) {
                if (std::holds_alternative<net::Heartbeat>(message)) return;
                inbox_.push(Event{
                    i, Event::Kind::kMessage, std::move(message), {}, Clock::now(), {}, attempt});
              });
              connection->set_close_handler([this, i, attempt](const std::string& reason) {
                inbox_.push(Event{i, Event::Kind::kClosed, {}, reason, Clock::now(), {}, attempt});
              });
              inbox_.push(Event{i, Event::Kind::kReady, worker, worker.backend, Clock::now(),
                                connection->remote_endpoint(), attempt, worker_name});
            });
      });
}

void Orchestrator::schedule_rejoin(std::size_t i, std::uint32_t attempt) {
  if (!rejoining_) return;
  Link& link = links_[i];
  link.backoff = link.backoff.count() == 0
                     ? options_.rejoin_backoff
                     : std::min(link.backoff * 2, options_.rejoin_backoff_max);
  if (!link.rejoin_timer) link.rejoin_timer = std::make_shared<net::asio::steady_timer>(io_);
  link.rejoin_timer->expires_after(link.backoff);
  link.rejoin_timer->async_wait([this, i, attempt](const boost::system::error_code& ec) {
    if (!ec && rejoining_) open_link(i, attempt, true);
  });
}

void Orchestrator::connect(RunResult& result) {
  for (std::size_t i = 0; i < links_.size(); ++i) on_io([this, i] { open_link(i, 0, false); });
  const auto deadline = Clock::now() + 2 * options_.connect_timeout;
  std::map<std::string, std::size_t> reached;  // endpoint -> the node that reached it
  for (std::size_t ready = 0; ready < links_.size(); ++ready) {
    const Event event = next(deadline, "the nodes to connect and authenticate");
    // Two host names of one worker: it would refuse the second LOAD of the job.
    if (const auto [it, fresh] = reached.emplace(event.endpoint, event.node);
        !fresh && event.kind == Event::Kind::kReady)
      fail(links_[event.node].config->name, describe(event.node) + " reached " + event.endpoint +
                                                ", the worker of " + describe(it->second) +
                                                ": list each worker once");
    if (event.kind != Event::Kind::kReady)
      fail(links_[event.node].config->name,
           describe(event.node) + ": unexpected " +
               std::string(net::message_type_name(net::type_of(event.message))));
    Link& link = links_[event.node];
    link.backend = event.text;
    link.worker_name = event.worker_name;  // a return must give the same name
    if (const auto* ok = std::get_if<net::AuthOk>(&event.message))
      link.device = DeviceInfo{ok->dpu_fingerprint, ok->dpu_batch};
    if (event.node < result.nodes.size()) {
      result.nodes[event.node].dpu_fingerprint = link.device.dpu_fingerprint;
      result.nodes[event.node].dpu_batch = link.device.dpu_batch;
    }
    if (!link.config->backend.empty() && link.backend != link.config->backend)
      fail(link.config->name, describe(event.node) + " runs backend '" + link.backend + "', " +
                                  cluster_.source.string() + ":" +
                                  std::to_string(link.config->line) + " says '" +
                                  link.config->backend + "'");
  }
  std::vector<std::string> backends;
  for (const Link& link : links_) backends.push_back(link.backend);
  if (link_is_paced(cluster_, backends)) {
    link_.bits_per_s = static_cast<std::uint64_t>(std::llround(cluster_.link_gbps * 1e9));
    link_.latency = std::chrono::microseconds(std::llround(cluster_.link_latency_us));
    result.link_emulation = "paced";
  } else {
    link_ = {};
    result.link_emulation = "off";
  }
  result.link_gbps = cluster_.link_gbps;
  result.link_latency_us = link_.paced() ? cluster_.link_latency_us : 0;
  connection_options_.port->configure(link_);
}

void Orchestrator::choose_fragments(const Plan& plan, JobLayout& layout) {
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    const Link& link = links_[slots_[slot]];
    try {
      use_compiled_fragments(plan, layout, static_cast<int>(slot), link.config->name, link.backend,
                             link.device);
    } catch (const Error& e) {
      fail(link.config->name, e.what());
    }
  }
}

// --- upload ------------------------------------------------------------------------------
Orchestrator::UploadCount Orchestrator::upload(const JobLayout& layout) {
  UploadCount count;
  std::vector<std::vector<std::size_t>> wanted(links_.size());  // fragment indices per link
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    const std::size_t node = slots_[slot];
    std::set<std::string> seen;
    auto it = layout.assignments.find(static_cast<int>(slot));
    if (it == layout.assignments.end()) continue;
    net::HaveQuery query;
    for (const net::FragmentAssignment& a : it->second) {
      if (!seen.insert(to_hex(a.sha)).second) continue;
      for (std::size_t k = 0; k < layout.fragments.size(); ++k)
        if (layout.fragments[k].sha == a.sha) {
          wanted[node].push_back(k);
          break;
        }
      query.hashes.push_back(a.sha);
    }
    send(node, std::move(query));
  }
  std::size_t replies = 0, uploads = 0;
  for (const auto& w : wanted)
    if (!w.empty()) ++replies;
  const auto deadline = Clock::now() + options_.load_timeout;
  while (replies > 0 || uploads > 0) {
    const Event event = next(deadline, "the nodes to receive their fragments");
    if (const auto* reply = std::get_if<net::HaveReply>(&event.message)) {
      const auto& fragments = wanted[event.node];
      if (reply->have.size() != fragments.size())
        fail(links_[event.node].config->name, describe(event.node) + " answered " +
                                                  std::to_string(reply->have.size()) + " of " +
                                                  std::to_string(fragments.size()) + " hashes");
      --replies;
      for (std::size_t j = 0; j < fragments.size(); ++j) {
        const WireFragment& wire = layout.fragments[fragments[j]];
        if (reply->have[j] != 0) {
          ++count.cached;
          continue;
        }
        ++uploads;
        ++count.uploaded;
        count.bytes += wire.bytes->size();
        on_io([this, node = event.node, wire] {
          auto& connection = links_[node].connection;
          const std::size_t total = wire.bytes->size();
          std::size_t offset = 0;
          do {
            const std::size_t n = std::min(kUploadChunk, total - offset);
            connection->send_raw(net::encode_upload_head(wire.sha, total, offset, n), wire.bytes,
                                 net::asio::buffer(wire.bytes->data() + offset, n));
            offset += n;
          } while (offset < total);
        });
      }
    } else if (std::holds_alternative<net::UploadDone>(event.message) && uploads > 0) {
      --uploads;
    } else {
      fail(links_[event.node].config->name,
           describe(event.node) + " sent " +
               std::string(net::message_type_name(net::type_of(event.message))) +
               " during the upload");
    }
  }
  return count;
}

// --- load --------------------------------------------------------------------------------
void Orchestrator::load(const JobLayout& layout) {
  std::vector<net::PeerAddress> peers;
  for (const std::size_t link : slots_)
    peers.push_back({links_[link].config->name, links_[link].config->address});
  std::size_t pending = 0;
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    const std::size_t node = slots_[slot];
    auto it = layout.assignments.find(static_cast<int>(slot));
    if (it == layout.assignments.end()) continue;
    send(node, net::Load{job_, links_[node].config->name,
                         static_cast<std::uint32_t>(options_.inflight), peers, it->second,
                         link_.bits_per_s, static_cast<std::uint32_t>(link_.latency.count())});
    ++pending;
  }
  const auto deadline = Clock::now() + options_.load_timeout;
  while (pending > 0) {
    const Event event = next(deadline, "the nodes to load their fragments");
    const auto* loaded = std::get_if<net::Loaded>(&event.message);
    if (loaded == nullptr || loaded->job != job_)
      fail(links_[event.node].config->name,
           describe(event.node) + " sent " +
               std::string(net::message_type_name(net::type_of(event.message))) +
               " instead of LOADED");
    links_[event.node].runner_batch = loaded->runner_batch;
    if (result_ != nullptr && event.node < result_->nodes.size())  // a reload while streaming
      result_->nodes[event.node].runner_batch = loaded->runner_batch;
    --pending;
  }
}

// --- stream ------------------------------------------------------------------------------
void Orchestrator::send_inputs(std::uint64_t frame) {
  const auto& own = flights_.at(frame).inputs;
  on_io([this, frame, job = job_, layout = layout_,
         inputs = own.empty() ? input_sets_[frame % input_sets_.size()] : own] {
    for (const InputRoute& route : layout->inputs) {
      const net::Target& target = route.target_for(frame);
      const std::size_t node = node_index(target.node);
      input_bytes_ += links_[node].connection->send_tensor(
          job, frame, target.slot, route.destination.index, inputs[route.model_input]);
    }
  });
}

void Orchestrator::stream(const Plan& plan, std::shared_ptr<const JobLayout> layout,
                          RunResult& result) {
  layout_ = std::move(layout);
  result_ = &result;
  for (std::size_t node = 0; node < result.nodes.size() && node < links_.size(); ++node)
    result.nodes[node].runner_batch = links_[node].runner_batch;
  frame_cycle_ = frame_cycle(plan);
  const std::size_t outputs = plan.model_outputs.size();
  // Open-ended (serve): frames come from the feed until it closes; none is "not yet sent".
  const bool open_ended = static_cast<bool>(options_.frame_feed);
  const auto frames = open_ended ? std::numeric_limits<std::uint64_t>::max()
                                 : static_cast<std::uint64_t>(options_.frames);
  frames_total_ = open_ended ? 0 : frames;
  // A few distinct input sets, cycled (frame f uses seed + f % 4); set 0 is exactly what
  // `exec --seed` feeds.
  const std::uint64_t sets = options_.frame_inputs ? 0 : std::min<std::uint64_t>(frames, 4);
  input_sets_.assign(sets, {});
  for (std::uint64_t s = 0; s < sets; ++s)
    for (const PlanTensor& t : plan.model_inputs)
      input_sets_[s].push_back(std::make_shared<const QTensor>(
          random_qtensor(t.name, t.shape, t.fix_point, options_.seed + s)));
  result.output_sha256.assign(outputs, "");
  result.first_outputs.assign(outputs, QTensor{});
  if (options_.hash_every_frame)
    result.frame_output_sha256.assign(frames, std::vector<std::string>(outputs));
  if (!open_ended) latencies_ms_.reserve(std::min<std::uint64_t>(frames, std::uint64_t{1} << 20));
  // Frames are delivered in frame order: one that completes early waits for those before it.
  std::set<std::uint64_t> waiting_delivery;
  std::set<std::uint64_t> skipped;  // frames whose inputs could not be read
  std::uint64_t next_delivery = 0;
  auto deliver = [&] {
    while (!waiting_delivery.empty() && *waiting_delivery.begin() == next_delivery) {
      waiting_delivery.erase(waiting_delivery.begin());
      if (options_.hash_every_frame && skipped.count(next_delivery) == 0)
        result.delivery_order.push_back(static_cast<std::int64_t>(next_delivery));
      ++next_delivery;
    }
  };

  next_frame_ = 0;
  stream_start_ = Clock::now();
  result.stream_start_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  last_completion_ = stream_start_;
  streaming_ = true;
  prepare_ahead();
  const std::uint64_t cpu_start = net::process_cpu_ns();
  // Server: the frames' arrival times, a Poisson process from the stream's start.
  const bool server = options_.arrival_fps > 0;
  std::vector<Clock::time_point> arrivals;
  if (server)
    for (const auto offset : poisson_arrivals(options_.arrival_fps, frames, options_.seed))
      arrivals.push_back(stream_start_ + offset);
  auto launch = [&] {
    Flight flight;
    if (options_.frame_inputs) {
      try {
        flight.inputs = checked_inputs(plan, options_.frame_inputs(next_frame_));
      } catch (const Error& e) {  // this frame cannot be read; the others still run
        if (options_.frame_skipped) options_.frame_skipped(next_frame_, e.what());
        ++result.frames_skipped;
        skipped.insert(next_frame_);
        waiting_delivery.insert(next_frame_++);
        deliver();
        return;
      }
    }
    // Latency counts from the frame's arrival (Server), else from its send (its input read).
    flight.start = server ? arrivals[next_frame_] : Clock::now();
    flights_[next_frame_] = std::move(flight);
    send_inputs(next_frame_);
    ++next_frame_;
  };
  // A returned node joins at a frame boundary: no frame is launched until those in flight
  // are done.
  auto room = [&] {
    return flights_.size() < static_cast<std::size_t>(options_.inflight) && !any_returned();
  };
  bool feed_closed = false;
  // Open-ended: the next frame goes only once the feed has it.
  auto feed_has_frame = [&] {
    if (!open_ended) return true;
    if (feed_closed) return false;
    const RunOptions::Feed feed = options_.frame_feed();
    feed_closed = feed == RunOptions::Feed::Closed;
    return feed == RunOptions::Feed::Waiting;
  };
  auto fill = [&] {
    if (!server)
      while (next_frame_ < frames && room() && feed_has_frame()) launch();
  };
  // Open-ended: the nodes' counters, asked now and then (RunOptions::node_counters).
  Clock::time_point next_stats = Clock::now();
  auto ask_stats = [&] {
    if (!open_ended || !options_.node_counters || Clock::now() < next_stats) return;
    next_stats = Clock::now() + options_.stats_interval;
    for (std::size_t slot = 0; slot < slots_.size(); ++slot)
      if (layout_->assignments.count(static_cast<int>(slot)) != 0)
        send(slots_[slot], net::StatsRequest{job_});
  };
  if (open_ended && options_.on_streaming)
    options_.on_streaming([this] {
      inbox_.push(Event{0, Event::Kind::kWake, {}, {}, Clock::now(), {}, 0});
    });
  fill();
  while (!flights_.empty() || (open_ended ? !feed_closed : next_frame_ < frames)) {
    try {
      if (open_ended) {
        fill();
        ask_stats();
      }
      if (flights_.empty() && any_returned()) {
        readmit();
        fill();
        continue;
      }
      if (server) {
        // Arrived frames are sent while the window has room (the workers' queues hold
        // `inflight` frames); the others wait at the head node, their latency running.
        while (next_frame_ < frames && arrivals[next_frame_] <= Clock::now() && room()) launch();
        if (flights_.empty()) {
          if (next_frame_ < frames) std::this_thread::sleep_until(arrivals[next_frame_]);
          continue;
        }
      }
      if (open_ended && flights_.empty() && feed_closed) break;
      // Open-ended and idle: no frame to wait for, only events and the feed's wake-ups.
      const Clock::time_point deadline =
          flights_.empty() ? Clock::time_point::max()
                           : flights_.begin()->second.start + options_.frame_timeout;
      const std::string waiting_for =
          flights_.empty() ? std::string("a frame to serve")
                           : "frame " + std::to_string(flights_.begin()->first) + " to complete";
      Event event;
      if (open_ended) {
        std::optional<Event> popped = inbox_.pop(std::min(deadline, Clock::now() + kStopPoll));
        if (!popped) {
          const bool stopped = options_.stop_signal != nullptr && options_.stop_signal->load() != 0;
          if (stopped || Clock::now() >= deadline) event = next(deadline, waiting_for);  // fails
          continue;
        }
        if (popped->kind == Event::Kind::kWake) continue;  // the feed has news: fill() asks
        std::optional<Event> kept = screened(std::move(*popped));
        if (!kept) continue;
        event = checked(std::move(*kept));
      } else if (server && next_frame_ < frames && room() && arrivals[next_frame_] < deadline) {
        // Short steps, as next() takes them, so a stop signal is noticed between arrivals.
        std::optional<Event> popped =
            inbox_.pop(std::min(arrivals[next_frame_], Clock::now() + kStopPoll));
        if (!popped) {
          if (options_.stop_signal != nullptr && options_.stop_signal->load() != 0)
            event = next(deadline, waiting_for);  // fails: interrupted
          continue;                               // the next frame arrives
        }
        std::optional<Event> kept = screened(std::move(*popped));
        if (!kept) continue;
        event = checked(std::move(*kept));
      } else {
        event = next(deadline, waiting_for);
      }
      const std::string& name = links_[event.node].config->name;
      if (const auto* stats = std::get_if<net::Stats>(&event.message);
          stats != nullptr && open_ended) {
        if (stats->job == job_ && options_.node_counters) {
          NodeCounters counters{stats->job, 0, 0, stats->tensor_bytes_sent};
          for (const net::FragmentStats& f : stats->fragments) {
            counters.busy_s += static_cast<double>(f.busy_ns) / 1e9;
            counters.frames += f.frames;
          }
          options_.node_counters(name, counters);
        }
        continue;
      }
      auto* tensor = std::get_if<net::TensorMsg>(&event.message);
      if (tensor == nullptr)
        fail(name, describe(event.node) + " sent " +
                       std::string(net::message_type_name(net::type_of(event.message))) +
                       " while frames were running");
      auto flight = flights_.find(tensor->frame);
      if (tensor->job != job_ || tensor->slot != net::kOrchestratorSlot ||
          flight == flights_.end() || tensor->index >= outputs ||
          (!flight->second.received.empty() && flight->second.received[tensor->index]))
        fail(name, describe(event.node) + " sent an unexpected output (frame " +
                       std::to_string(tensor->frame) + ", output " + std::to_string(tensor->index) +
                       ")");
      const PlanTensor& want = plan.model_outputs[tensor->index];
      if (tensor->tensor.shape != want.shape || tensor->tensor.fix_point != want.fix_point)
        fail(name, describe(event.node) + ": output '" + want.name + "' of frame " +
                       std::to_string(tensor->frame) + " is " + shape_text(tensor->tensor.shape) +
                       " fix_point " + std::to_string(tensor->tensor.fix_point) +
                       ", the plan says " + shape_text(want.shape) + " fix_point " +
                       std::to_string(want.fix_point));
      // A timing-only backend's zeros get no hash.
      const std::string hash = tensor->tensor.computed ? sha256_hex(tensor->tensor.data) : "";
      if (options_.hash_every_frame)
        result.frame_output_sha256[tensor->frame][tensor->index] = hash;
      Flight& f = flight->second;
      tensor->tensor.name = want.name;
      if (tensor->frame == 0) {
        result.output_sha256[tensor->index] = hash;
        result.first_outputs[tensor->index] = tensor->tensor;
      }
      if (options_.frame_outputs) {
        if (f.outputs.empty()) f.outputs.resize(outputs);
        f.outputs[tensor->index] = std::move(tensor->tensor);
      } else {
        buffers_->give(std::move(tensor->tensor.data));
      }
      if (f.received.empty()) f.received.assign(outputs, false);
      f.received[tensor->index] = true;
      if (++f.count < outputs) continue;
      // A run's percentiles and event rates; an open-ended stream (a server up for days)
      // keeps no per-frame record, so its memory does not grow with the frames served.
      if (!open_ended) {
        latencies_ms_.push_back(
            std::chrono::duration<double, std::milli>(event.at - f.start).count());
        completions_.push_back(event.at);
      }
      stream_end_ = event.at;
      if (open_event_) {  // the first frame on the plan a loss or return switched to
        NodeEvent& switched = result.node_events[*open_event_];
        switched.first_frame_s = since_start(event.at) - switched.detected_s;
        switched.outage_s = since_start(event.at) - outage_from_s_;
        open_event_.reset();
      }
      last_completion_ = event.at;
      const std::uint64_t done = flight->first;
      std::vector<QTensor> done_outputs = std::move(f.outputs);
      waiting_delivery.insert(done);
      flights_.erase(flight);
      ++result.frames_completed;
      deliver();
      if (options_.frame_outputs) options_.frame_outputs(done, std::move(done_outputs));
      fill();
    } catch (const NodeLost& lost) {
      recover(lost);  // the frames in flight are re-sent on the new plan
      fill();
    }
  }
  // streaming_ stays set: a node lost while the statistics are collected is no failure.
  stream_cpu_ns_ = net::process_cpu_ns() - cpu_start;
}

void Orchestrator::summarize(RunResult& result) const {
  if (latencies_ms_.empty()) return;
  result.wall_s = std::chrono::duration<double>(stream_end_ - stream_start_).count();
  result.throughput_fps =
      result.wall_s > 0 ? static_cast<double>(latencies_ms_.size()) / result.wall_s : 0;
  // Steady state: the window's fill left out, whole cycles of the plan's frame order.
  const double steady = steady_rate(completions_, options_.inflight, frame_cycle_);
  result.steady_fps = steady > 0 ? steady : result.throughput_fps;
  result.steady_fps_spread = steady_rate_spread(completions_, options_.inflight, frame_cycle_);
  result.latency_p50_spread = median_spread(latencies_ms_);
  std::vector<double> sorted = latencies_ms_;
  std::sort(sorted.begin(), sorted.end());
  measure_events(result);
  // Nearest rank: the smallest latency at least p % of the frames do not exceed.
  auto percentile = [&](double p) {
    const auto rank =
        static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
  };
  result.orchestrator_cpu_ms_per_frame =
      static_cast<double>(stream_cpu_ns_) / 1e6 / static_cast<double>(latencies_ms_.size());
  result.latency_p50_ms = percentile(50);
  result.latency_p90_ms = percentile(90);
  result.latency_p99_ms = percentile(99);
  result.latency_min_ms = sorted.front();
  result.latency_max_ms = sorted.back();
  double sum = 0;
  for (double l : sorted) sum += l;
  result.latency_mean_ms = sum / static_cast<double>(sorted.size());
}

// --- stats and goodbye -------------------------------------------------------------------
void Orchestrator::collect_stats(RunResult& result) {
  std::set<std::size_t> pending;  // links
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    if (layout_->assignments.count(static_cast<int>(slot)) == 0) continue;
    send(slots_[slot], net::StatsRequest{job_});
    pending.insert(slots_[slot]);
  }
  std::uint64_t wire_bytes = input_bytes_.load();
  const auto deadline = Clock::now() + kStatsTimeout;
  while (!pending.empty()) {
    Event event;
    try {
      event = next(deadline, "the nodes' statistics");
    } catch (const NodeLost& lost) {  // after the last frame: the node just gives no figures
      if (!lost.stays) mark_lost(lost);
      pending.erase(lost.link);
      continue;
    }
    const auto* stats = std::get_if<net::Stats>(&event.message);
    if (stats == nullptr || stats->job != job_) continue;  // a late message of the stream
    pending.erase(event.node);
    NodeResult& node = result.nodes[event.node];
    node.backend = links_[event.node].backend;
    for (const net::FragmentStats& f : stats->fragments) {
      node.frames_computed += f.frames;
      node.busy_ms += static_cast<double>(f.busy_ns) / 1e6;
      node.max_queue = std::max(node.max_queue, f.max_queue);
      node.compute_cpu_ms += static_cast<double>(f.cpu_ns) / 1e6;
    }
    node.cpu_ms = static_cast<double>(stats->cpu_ns) / 1e6;
    node.tensor_bytes_sent = stats->tensor_bytes_sent;
    node.utilization = result.wall_s > 0 ? node.busy_ms / (result.wall_s * 1000.0) : 0;
    wire_bytes += stats->tensor_bytes_sent;
  }
  if (result.frames_completed > 0)
    result.wire_bytes_per_frame =
        static_cast<double>(wire_bytes) / static_cast<double>(result.frames_completed);
}

void Orchestrator::finish() {
  rejoining_ = false;  // a node still lost stays so
  std::promise<std::size_t> open_promise;
  std::future<std::size_t> open_future = open_promise.get_future();
  on_io([this, &open_promise] {
    std::size_t open = 0;
    for (Link& link : links_) {
      if (link.rejoin_timer) link.rejoin_timer->cancel();
      if (!link.connection || !link.connection->is_open()) continue;
      if (options_.shutdown_workers)
        link.connection->send(net::Shutdown{});
      else
        link.connection->send(net::Unload{job_});
      link.connection->close_after_flush("run finished");
      ++open;
    }
    open_promise.set_value(open);
  });
  // Wait (briefly) until every goodbye is written.
  const auto deadline = Clock::now() + kGoodbyeTimeout;
  if (open_future.wait_until(deadline) != std::future_status::ready) return;
  std::size_t open = open_future.get();
  while (open > 0) {
    const auto event = inbox_.pop(deadline);
    if (!event) break;
    if (event->kind == Event::Kind::kClosed) --open;
  }
}

void Orchestrator::cancel() {
  std::promise<std::size_t> open_promise;
  std::future<std::size_t> open_future = open_promise.get_future();
  on_io([this, &open_promise] {
    std::size_t open = 0;
    for (Link& link : links_) {
      if (!link.connection || !link.connection->is_open()) continue;
      link.connection->send(net::Unload{job_});
      link.connection->close_after_flush("run interrupted");
      ++open;
    }
    open_promise.set_value(open);
  });
  const auto deadline = Clock::now() + kGoodbyeTimeout;
  if (open_future.wait_until(deadline) != std::future_status::ready) return;
  std::size_t open = open_future.get();
  while (open > 0) {
    const auto event = inbox_.pop(deadline);
    if (!event) break;
    if (event->kind == Event::Kind::kClosed) --open;
  }
}

// --- the run -----------------------------------------------------------------------------
RunResult run_on_cluster(const Plan& plan, const std::filesystem::path& plan_dir,
                         const ClusterConfig& cluster, const RunOptions& options) {
  if (options.frames < 1) throw Error("--frames must be at least 1");
  if (options.inflight < 1) throw Error("--inflight must be at least 1");
  std::vector<std::string> names;
  for (const NodeConfig& node : cluster.nodes) names.push_back(node.name);
  auto layout = std::make_shared<JobLayout>(make_job_layout(plan, plan_dir, names));
  if (options.on_node_loss == OnNodeLoss::Replan && !options.replanner)
    throw Error("--on-node-loss replan needs a planner");

  RunResult result;
  result.frames_requested = options.frames;
  result.inflight = options.inflight;
  result.on_node_loss = std::string(on_node_loss_name(options.on_node_loss));
  for (int i = 0; i < plan.nodes; ++i) {
    const NodeConfig& config = cluster.nodes[static_cast<std::size_t>(i)];
    NodeResult node;
    node.name = config.name;
    node.address = config.address;
    node.backend = config.backend;
    if (auto it = layout->fragment_names.find(i); it != layout->fragment_names.end())
      node.fragments = it->second;
    result.nodes.push_back(std::move(node));
  }
  Orchestrator orchestrator(cluster, options, plan.nodes);
  try {
    orchestrator.set_full_plan(plan, plan_dir, *layout);
    orchestrator.connect(result);
    orchestrator.choose_fragments(plan, *layout);
    const auto uploaded = orchestrator.upload(*layout);
    result.upload_bytes = uploaded.bytes;
    result.fragments_uploaded = uploaded.uploaded;
    result.fragments_cached = uploaded.cached;
    orchestrator.load(*layout);
    orchestrator.stream(plan, layout, result);
    orchestrator.summarize(result);
    orchestrator.collect_stats(result);
    orchestrator.finish();
    result.complete = true;
  } catch (const RunFailure& failure) {
    orchestrator.summarize(result);
    result.error = failure.message;
    result.failed_node = failure.node;
    result.failed_frame = failure.frame;
    result.interrupted_by = orchestrator.interrupted_by();
    // Stopped by the user: every node drops the job and its frames in flight now, rather
    // than when it notices the closed connection.
    if (result.interrupted_by != 0) orchestrator.cancel();
  }
  return result;
}

}  // namespace dpushard::cluster
