// The orchestrator under --on-node-loss replan: a lost node is left out of a new plan for
// the others, the frames in flight are re-sent on it, and a node that answers again joins
// at a frame boundary (docs/cluster.md, "Losing a node").

#include <algorithm>
#include <cstring>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/net/client.hpp"
#include "orchestrator.hpp"

namespace dpushard::cluster {

std::string_view on_node_loss_name(OnNodeLoss policy) {
  return policy == OnNodeLoss::Replan ? "replan" : "fail";
}

namespace {

std::uint64_t job_of(const net::Message& message) {
  if (const auto* m = std::get_if<net::TensorMsg>(&message)) return m->job;
  if (const auto* m = std::get_if<net::FrameError>(&message)) return m->job;
  if (const auto* m = std::get_if<net::Loaded>(&message)) return m->job;
  if (const auto* m = std::get_if<net::Stats>(&message)) return m->job;
  return 0;
}

// Completed frames per second among `times` (seconds) within [from, to]: 0 for fewer than two.
double rate_between(const std::vector<double>& times, double from, double to) {
  std::size_t n = 0;
  double first = 0, last = 0;
  for (double t : times) {
    if (t < from || t > to) continue;
    if (n++ == 0) first = t;
    last = t;
  }
  return n >= 2 && last > first ? static_cast<double>(n - 1) / (last - first) : 0;
}

}  // namespace

double Orchestrator::since_start(Clock::time_point t) const {
  return std::chrono::duration<double>(t - stream_start_).count();
}

std::vector<std::size_t> Orchestrator::active_links() const {
  std::vector<std::size_t> active;
  for (std::size_t i = 0; i < links_.size(); ++i)
    if (links_[i].state == NodeState::kActive) active.push_back(i);
  return active;
}

bool Orchestrator::any_returned() const {
  return std::any_of(links_.begin(), links_.end(),
                     [](const Link& link) { return link.state == NodeState::kReturned; });
}

Orchestrator::Prepared Orchestrator::make_prepared(const std::vector<std::size_t>& nodes) const {
  Prepared prepared;
  std::vector<std::string> names(links_.size());
  for (std::size_t slot = 0; slot < nodes.size(); ++slot)
    names[slot] = links_[nodes[slot]].config->name;
  try {
    prepared.plan = options_.replanner(nodes, prepared.why);
    if (prepared.plan)
      prepared.layout = std::make_shared<const JobLayout>(
          make_job_layout(prepared.plan->plan, prepared.plan->dir, names));
  } catch (const Error& e) {
    prepared.plan.reset();
    prepared.why = e.what();
  }
  return prepared;
}

void Orchestrator::prepare_ahead() {
  if (!replan_ || links_.size() < 2) return;
  // One task, one set after the other: the machine's cores are busy with frames.
  auto promises = std::make_shared<std::vector<std::promise<Prepared>>>(links_.size());
  std::vector<std::vector<std::size_t>> sets;
  for (std::size_t left_out = 0; left_out < links_.size(); ++left_out) {
    std::vector<std::size_t> nodes;
    for (std::size_t n = 0; n < links_.size(); ++n)
      if (n != left_out) nodes.push_back(n);
    ahead_[nodes] = (*promises)[left_out].get_future().share();
    sets.push_back(std::move(nodes));
  }
  preparing_ = std::async(std::launch::async, [this, promises, sets] {
    for (std::size_t k = 0; k < sets.size(); ++k) (*promises)[k].set_value(make_prepared(sets[k]));
  });
}

void Orchestrator::set_full_plan(const Plan& plan, const std::filesystem::path& dir,
                                 const JobLayout& layout) {
  full_plan_ = PlanOnNodes{plan, dir};
  full_layout_ = layout;
}

std::optional<Event> Orchestrator::screened(Event event) {
  if (!replan_) return event;
  Link& link = links_[event.node];
  // An earlier connection of a node lost since, or a job a plan switch ended.
  const std::uint64_t job = job_of(event.message);
  if (event.attempt != link.attempt || (job != 0 && retired_jobs_.count(job) != 0)) {
    if (auto* tensor = std::get_if<net::TensorMsg>(&event.message))
      buffers_->give(std::move(tensor->tensor.data));
    if (result_ != nullptr) ++result_->stale_messages_dropped;
    return std::nullopt;
  }
  if (!streaming_) return event;
  if (link.state == NodeState::kLost) {
    if (event.kind != Event::Kind::kReady) return std::nullopt;
    // It answered a new HELLO on its address: it joins at the next frame boundary, unless
    // another worker now listens there (another name) or it runs another backend than
    // cluster.yaml says.
    if (event.worker_name != link.worker_name) {
      refuse_return(event.node, "the worker at " + link.config->address + " is now '" +
                                    event.worker_name + "', not '" + link.worker_name +
                                    "' as when the run began");
      return std::nullopt;
    }
    if (!link.config->backend.empty() && event.text != link.config->backend) {
      refuse_return(event.node, "it now runs backend '" + event.text + "', " +
                                    cluster_.source.string() + " says '" + link.config->backend +
                                    "'");
      return std::nullopt;
    }
    link.refusal.clear();
    link.backend = event.text;
    if (const auto* ok = std::get_if<net::AuthOk>(&event.message))
      link.device = DeviceInfo{ok->dpu_fingerprint, ok->dpu_batch};
    link.state = NodeState::kReturned;
    link.returned_at = event.at;
    return std::nullopt;
  }
  if (link.state == NodeState::kReturned) {
    if (event.kind == Event::Kind::kClosed)  // gone again before it joined
      mark_lost(NodeLost{event.node, event.text, event.at});
    return std::nullopt;
  }
  if (event.kind == Event::Kind::kClosed)
    throw NodeLost{event.node, "connection lost: " + event.text, event.at};
  if (const auto* error = std::get_if<net::FrameError>(&event.message)) {
    const std::size_t at_fault = node_index(error->node);
    const bool known = at_fault < links_.size();
    const std::string reporter =
        known && at_fault != event.node ? " (reported by '" + link.config->name + "')" : "";
    if (error->code == net::ErrorCode::kPeerLost && known) {
      if (links_[at_fault].state != NodeState::kActive) return std::nullopt;
      throw NodeLost{at_fault, "peer_lost: " + error->message + reporter, event.at};
    }
    if (error->code == net::ErrorCode::kDeviceFailed) {
      const std::size_t node = known ? at_fault : event.node;
      const int errors = ++links_[node].device_errors;
      const bool below_limit = errors < options_.device_error_limit;
      // At the limit the node is lost for the rest of the run: its worker would answer a
      // new HELLO at once and bring the failing device back.
      throw NodeLost{node,
                     "device_failed (" + std::to_string(errors) + " of " +
                         std::to_string(options_.device_error_limit) + "): " + error->message +
                         reporter,
                     event.at, below_limit, below_limit};
    }
  }
  return event;
}

void Orchestrator::mark_lost(const NodeLost& lost) {
  Link& link = links_[lost.link];
  link.state = NodeState::kLost;
  const std::uint32_t attempt = ++link.attempt;
  on_io([this, i = lost.link, attempt, rejoin = lost.rejoin] {
    if (links_[i].connection) links_[i].connection->close("node lost");
    links_[i].backoff = {};
    if (rejoin) schedule_rejoin(i, attempt);
  });
}

void Orchestrator::refuse_return(std::size_t node, const std::string& why) {
  Link& link = links_[node];
  if (link.refusal != why) {
    link.refusal = why;
    log_->warn("event=return_refused node={} address={} reason=\"{}\"", link.config->name,
               link.config->address, why);
  }
  // Its connection closes (its events are stale from here: a new attempt) and it is called
  // again with back-off.
  const std::uint32_t attempt = ++link.attempt;
  on_io([this, node, attempt] {
    if (links_[node].connection) links_[node].connection->close("not taken back");
    schedule_rejoin(node, attempt);
  });
}

void Orchestrator::recover(const NodeLost& lost) {
  NodeEvent event;
  event.kind = lost.stays ? NodeEvent::Kind::DeviceError : NodeEvent::Kind::Loss;
  event.node = links_[lost.link].config->name;
  event.cause = lost.cause;
  event.detected_s = since_start(lost.at);
  if (!lost.stays) mark_lost(lost);
  result_->node_events.push_back(std::move(event));
  switch_plan(result_->node_events.size() - 1);
}

void Orchestrator::readmit() {
  for (std::size_t i = 0; i < links_.size(); ++i) {
    Link& link = links_[i];
    if (link.state != NodeState::kReturned) continue;
    link.state = NodeState::kActive;
    link.device_errors = 0;
    NodeEvent event;
    event.kind = NodeEvent::Kind::Return;
    event.node = link.config->name;
    event.cause = "answered a new HELLO at " + link.config->address;
    event.detected_s = since_start(link.returned_at);
    result_->node_events.push_back(std::move(event));
  }
  switch_plan(result_->node_events.size() - 1);
}

void Orchestrator::switch_plan(std::size_t event_index) {
  outage_from_s_ = since_start(last_completion_);
  for (;;) {
    NodeEvent& event = result_->node_events[event_index];
    try {
      const std::vector<std::size_t> nodes = active_links();
      if (nodes.empty()) fail_unserved_frames("no node is left");
      const auto asked = Clock::now();
      std::optional<PlanOnNodes> made;
      std::string why;
      std::shared_ptr<JobLayout> layout;
      try {
        if (nodes.size() == links_.size()) {
          made = full_plan_;  // every node again: the plan the run began with, read once
          layout = std::make_shared<JobLayout>(*full_layout_);
        } else {
          const auto ahead = ahead_.find(nodes);
          const Prepared prepared =
              ahead != ahead_.end() ? ahead->second.get() : make_prepared(nodes);
          event.plan_ms = std::chrono::duration<double, std::milli>(Clock::now() - asked).count();
          made = prepared.plan;
          why = prepared.why;
          // A copy: choose_fragments() adapts it to the nodes' DPUs.
          if (prepared.layout) layout = std::make_shared<JobLayout>(*prepared.layout);
        }
      } catch (const Error& e) {
        made.reset();
        why = e.what();
      }
      if (!made) fail_unserved_frames(why);
      // The old job ends on every node that keeps running (its queued frames dropped);
      // whatever it still sends is stale from here on.
      for (const std::size_t link : nodes) send(link, net::Unload{job_});
      retired_jobs_.insert(job_);
      const net::Digest random = net::random_nonce();
      std::memcpy(&job_, random.data(), sizeof job_);
      slots_ = nodes;
      choose_fragments(made->plan, *layout);
      const auto upload_start = Clock::now();
      const UploadCount uploaded = upload(*layout);
      event.upload_s = std::chrono::duration<double>(Clock::now() - upload_start).count();
      event.upload_bytes = uploaded.bytes;
      event.fragments_uploaded = uploaded.uploaded;
      result_->upload_bytes += uploaded.bytes;
      result_->fragments_uploaded += uploaded.uploaded;
      load(*layout);
      layout_ = layout;
      // Every frame in flight starts over on the new job; its outputs so far are dropped.
      for (auto& [frame, flight] : flights_) {
        flight.received.clear();
        flight.outputs.clear();
        flight.count = 0;
        send_inputs(frame);
      }
      event.frames_resent = static_cast<std::int64_t>(flights_.size());
      result_->frames_resent += event.frames_resent;
      event.switch_s = since_start(Clock::now()) - event.detected_s;
      event.nodes_after.clear();
      for (const std::size_t link : nodes) event.nodes_after.push_back(links_[link].config->name);
      event.plan_after =
          plan_label(made->plan.strategy, made->plan.replicas, made->plan.inner_strategy);
      event.predicted_fps_after = made->plan.predicted.throughput_fps;
      for (std::size_t slot = 0; slot < nodes.size(); ++slot) {
        auto it = layout->fragment_names.find(static_cast<int>(slot));
        result_->nodes[nodes[slot]].fragments =
            it == layout->fragment_names.end() ? std::vector<std::string>{} : it->second;
      }
      open_event_ = event_index;  // the next completion is the new plan's first frame
      return;
    } catch (const NodeLost& again) {
      // Another node lost before the switch was done: its own event, and the switch
      // starts over without it (this event's switch figures stay -1).
      NodeEvent next;
      next.kind = again.stays ? NodeEvent::Kind::DeviceError : NodeEvent::Kind::Loss;
      next.node = links_[again.link].config->name;
      next.cause = again.cause;
      next.detected_s = since_start(again.at);
      if (!again.stays) mark_lost(again);
      result_->node_events.push_back(std::move(next));
      event_index = result_->node_events.size() - 1;
    }
  }
}

void Orchestrator::fail_unserved_frames(const std::string& why) {
  // The frames in flight and those not yet sent: one coded error each, as ranges.
  std::vector<std::uint64_t> unserved;
  for (const auto& [frame, flight] : flights_) unserved.push_back(frame);
  auto add = [&](std::uint64_t frame) {
    auto& failed = result_->failed_frames;
    if (!failed.empty() && failed.back().last + 1 == static_cast<std::int64_t>(frame)) {
      failed.back().last = static_cast<std::int64_t>(frame);
      return;
    }
    failed.push_back(FailedFrames{static_cast<std::int64_t>(frame),
                                  static_cast<std::int64_t>(frame), "no_plan", why});
  };
  for (std::uint64_t frame : unserved) add(frame);
  if (next_frame_ < frames_total_) {
    add(next_frame_);
    result_->failed_frames.back().last = static_cast<std::int64_t>(frames_total_ - 1);
  }
  const std::uint64_t unsent = frames_total_ > next_frame_ ? frames_total_ - next_frame_ : 0;
  const std::uint64_t count = unserved.size() + unsent;
  const std::int64_t first = result_->failed_frames.empty() ? -1 : result_->failed_frames[0].first;
  flights_.clear();
  throw RunFailure{"", first,
                   std::to_string(count) + " frames could not be served: no_plan: " + why};
}

void Orchestrator::measure_events(RunResult& result) const {
  std::vector<double> times;
  times.reserve(completions_.size());
  for (const auto& t : completions_) times.push_back(since_start(t));
  const double end = since_start(stream_end_);
  auto& events = result.node_events;
  for (std::size_t k = 0; k < events.size(); ++k) {
    NodeEvent& e = events[k];
    const NodeEvent* before = k > 0 ? &events[k - 1] : nullptr;
    const double from = before == nullptr            ? 0
                        : before->first_frame_s >= 0 ? before->detected_s + before->first_frame_s
                                                     : before->detected_s;
    const double until = k + 1 < events.size() ? events[k + 1].detected_s : end;
    e.fps_before = rate_between(times, from, e.detected_s);
    if (e.first_frame_s < 0) continue;
    const double first = e.detected_s + e.first_frame_s;
    std::size_t during = 0;
    for (double t : times)
      if (t >= e.detected_s && t <= first) ++during;
    e.fps_during = first > e.detected_s ? static_cast<double>(during) / (first - e.detected_s) : 0;
    e.fps_after = rate_between(times, first, until);
  }
}

}  // namespace dpushard::cluster
