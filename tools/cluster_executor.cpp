// The cluster executor of `serve --cluster`: requests become the frames of one open-ended
// orchestrator stream (cluster_executor.hpp).

#include "cluster_executor.hpp"

#include <csignal>
#include <exception>
#include <utility>

#include "dpushard/base/error.hpp"

namespace dpushard::cli {

namespace {

ServedTensor served(const PlanTensor& t) { return {t.name, t.shape, t.fix_point, t.round_mode}; }

}  // namespace

ClusterExecutor::ClusterExecutor(const Plan& plan, const std::string& plan_dir,
                                 const cluster::ClusterConfig& cluster, cluster::RunOptions options,
                                 bool timing_only)
    : plan_(plan),
      plan_dir_(plan_dir),
      cluster_(cluster),
      options_(std::move(options)),
      timing_only_(timing_only) {
  model_.name = plan.model_name;
  for (const auto& t : plan.model_inputs) model_.inputs.push_back(served(t));
  for (const auto& t : plan.model_outputs) model_.outputs.push_back(served(t));
  for (int i = 0; i < plan.nodes && i < static_cast<int>(cluster.nodes.size()); ++i) {
    nodes_.push_back(cluster.nodes[static_cast<std::size_t>(i)].name);
    counted_[nodes_.back()].before.node = nodes_.back();
  }
  options_.node_counters = [this](const std::string& node, const cluster::NodeCounters& c) {
    count(node, c);
  };
  options_.stop_signal = &stop_;
  options_.frame_feed = [this] { return feed(); };
  options_.frame_inputs = [this](std::uint64_t frame) { return take(frame); };
  options_.frame_skipped = [this](std::uint64_t frame, const std::string& error) {
    fail(frame, error);
  };
  options_.frame_outputs = [this](std::uint64_t frame, std::vector<QTensor> outputs) {
    complete(frame, std::move(outputs));
  };
  options_.on_streaming = [this](std::function<void()> wake) {
    {
      std::lock_guard lock(mutex_);
      wake_ = std::move(wake);
      started_or_ended_ = true;
      ready_ = true;
    }
    started_.notify_all();
  };
  thread_ = std::thread([this] { run(); });
}

ClusterExecutor::~ClusterExecutor() { close(); }

void ClusterExecutor::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    if (wake_)
      wake_();
    else if (ended_.empty())
      stop_ = SIGTERM;  // still connecting or loading: give up at once
  }
  if (thread_.joinable()) thread_.join();
}

void ClusterExecutor::run() {
  std::string why;
  try {
    const cluster::RunResult result = cluster::run_on_cluster(plan_, plan_dir_, cluster_, options_);
    why = result.complete ? "the cluster stream ended" : result.error;
  } catch (const std::exception& e) {
    why = e.what();
  }
  end(why.empty() ? "the cluster stream ended" : why);
}

void ClusterExecutor::end(const std::string& why) {
  std::deque<std::shared_ptr<Request>> waiting;
  std::map<std::uint64_t, std::shared_ptr<Request>> in_flight;
  {
    std::lock_guard lock(mutex_);
    ready_ = false;
    wake_ = nullptr;  // the orchestrator is gone
    ended_ = why;
    started_or_ended_ = true;
    waiting.swap(waiting_);
    in_flight.swap(in_flight_);
  }
  started_.notify_all();
  const auto error = std::make_exception_ptr(Error(why));
  for (auto& request : waiting) request->outputs.set_exception(error);
  for (auto& [frame, request] : in_flight) request->outputs.set_exception(error);
}

bool ClusterExecutor::wait_until_streaming() {
  std::unique_lock lock(mutex_);
  started_.wait(lock, [this] { return started_or_ended_; });
  return ended_.empty();
}

std::string ClusterExecutor::why() const {
  std::lock_guard lock(mutex_);
  return ended_;
}

std::vector<QTensor> ClusterExecutor::infer(const std::vector<QTensor>& inputs) {
  auto request = std::make_shared<Request>();
  request->inputs = inputs;
  std::future<std::vector<QTensor>> outputs = request->outputs.get_future();
  {
    std::lock_guard lock(mutex_);
    if (!ended_.empty()) throw Error(ended_);
    if (closed_) throw Error("the server is shutting down");
    waiting_.push_back(request);
    if (wake_) wake_();
  }
  std::vector<QTensor> result = outputs.get();
  if (timing_only_) return result;
  for (const QTensor& t : result)
    if (!t.computed)
      throw Error("output '" + t.name +
                  "' was not computed: a node runs a timing-only backend (sim); serve needs "
                  "workers that compute (ref, cpu or a DPU), or --timing-only for a benchmark");
  return result;
}

cluster::RunOptions::Feed ClusterExecutor::feed() const {
  std::lock_guard lock(mutex_);
  if (!waiting_.empty()) return cluster::RunOptions::Feed::Waiting;
  return closed_ ? cluster::RunOptions::Feed::Closed : cluster::RunOptions::Feed::Idle;
}

std::vector<QTensor> ClusterExecutor::take(std::uint64_t frame) {
  std::lock_guard lock(mutex_);
  std::shared_ptr<Request> request = std::move(waiting_.front());
  waiting_.pop_front();
  in_flight_[frame] = request;
  return request->inputs;
}

void ClusterExecutor::complete(std::uint64_t frame, std::vector<QTensor> outputs) {
  std::shared_ptr<Request> request;
  {
    std::lock_guard lock(mutex_);
    auto it = in_flight_.find(frame);
    if (it == in_flight_.end()) return;
    request = std::move(it->second);
    in_flight_.erase(it);
  }
  request->outputs.set_value(std::move(outputs));
}

void ClusterExecutor::fail(std::uint64_t frame, const std::string& error) {
  std::shared_ptr<Request> request;
  {
    std::lock_guard lock(mutex_);
    auto it = in_flight_.find(frame);
    if (it == in_flight_.end()) return;
    request = std::move(it->second);
    in_flight_.erase(it);
  }
  request->outputs.set_exception(std::make_exception_ptr(Error(error)));
}

void ClusterExecutor::count(const std::string& node, const cluster::NodeCounters& counters) {
  std::lock_guard lock(mutex_);
  Counted& c = counted_[node];
  if (c.job.job != counters.job) {  // a new job (a plan switch): the old one's figures stay
    c.before.busy_seconds += c.job.busy_s;
    c.before.frames += c.job.frames;
    c.before.bytes_out += c.job.bytes_sent;
  }
  c.job = counters;
}

// Bytes in are not counted per worker (a worker reports what it sends): 0.
std::vector<NodeStats> ClusterExecutor::node_stats() const {
  std::lock_guard lock(mutex_);
  std::vector<NodeStats> out;
  for (const std::string& node : nodes_) {
    const Counted& c = counted_.at(node);
    NodeStats s = c.before;
    s.busy_seconds += c.job.busy_s;
    s.frames += c.job.frames;
    s.bytes_out += c.job.bytes_sent;
    out.push_back(s);
  }
  return out;
}

}  // namespace dpushard::cli
