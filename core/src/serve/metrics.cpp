// Prometheus text format: HELP and TYPE lines, then one sample per line.

#include "metrics.hpp"

#include <sstream>

namespace dpushard::serve {

namespace {

const char* outcome_label(InferOutcome o) {
  switch (o) {
    case InferOutcome::Success:
      return "success";
    case InferOutcome::BadRequest:
      return "bad_request";
    case InferOutcome::QueueFull:
      return "queue_full";
    case InferOutcome::NotReady:
      return "not_ready";
    case InferOutcome::Failed:
      return "failed";
  }
  return "failed";
}

void header(std::ostringstream& out, const char* name, const char* type, const char* help) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

// A label value with \, " and newline escaped as the format asks.
std::string label_value(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void Metrics::count_response(int status) {
  std::lock_guard lock(mutex_);
  ++responses_[status];
}

void Metrics::count_infer(InferOutcome outcome, double seconds) {
  std::lock_guard lock(mutex_);
  ++infers_[outcome];
  if (outcome != InferOutcome::Success) return;
  for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i)
    if (seconds <= kLatencyBuckets[i]) ++bucket_counts_[i];
  ++latency_count_;
  latency_sum_ += seconds;
}

std::string Metrics::render(const Gauges& gauges, const std::vector<NodeStats>& nodes) const {
  std::ostringstream out;
  out.precision(9);
  std::lock_guard lock(mutex_);
  header(out, "dpushard_http_requests_total", "counter", "HTTP responses sent, by status code.");
  for (const auto& [code, n] : responses_)
    out << "dpushard_http_requests_total{code=\"" << code << "\"} " << n << '\n';
  header(out, "dpushard_inference_requests_total", "counter", "Infer requests, by outcome.");
  for (auto o : {InferOutcome::Success, InferOutcome::BadRequest, InferOutcome::QueueFull,
                 InferOutcome::NotReady, InferOutcome::Failed}) {
    const auto it = infers_.find(o);
    out << "dpushard_inference_requests_total{outcome=\"" << outcome_label(o) << "\"} "
        << (it == infers_.end() ? 0 : it->second) << '\n';
  }
  header(out, "dpushard_inference_failures_total", "counter",
         "Infer requests the executor failed to run (HTTP 500).");
  const auto failed = infers_.find(InferOutcome::Failed);
  out << "dpushard_inference_failures_total " << (failed == infers_.end() ? 0 : failed->second)
      << '\n';
  header(out, "dpushard_inference_latency_seconds", "histogram",
         "Successful infer requests, arrival to response.");
  for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i)
    out << "dpushard_inference_latency_seconds_bucket{le=\"" << kLatencyBuckets[i] << "\"} "
        << bucket_counts_[i] << '\n';
  out << "dpushard_inference_latency_seconds_bucket{le=\"+Inf\"} " << latency_count_ << '\n'
      << "dpushard_inference_latency_seconds_sum " << latency_sum_ << '\n'
      << "dpushard_inference_latency_seconds_count " << latency_count_ << '\n';
  header(out, "dpushard_queue_depth", "gauge", "Infer requests waiting for the executor.");
  out << "dpushard_queue_depth " << gauges.queue_depth << '\n';
  header(out, "dpushard_queue_capacity", "gauge", "Waiting requests beyond which serve says 503.");
  out << "dpushard_queue_capacity " << gauges.queue_capacity << '\n';
  header(out, "dpushard_in_flight", "gauge", "Infer requests the executor is running.");
  out << "dpushard_in_flight " << gauges.in_flight << '\n';
  header(out, "dpushard_node_busy_seconds_total", "counter", "Time a node spent on frames.");
  for (const auto& n : nodes)
    out << "dpushard_node_busy_seconds_total{node=\"" << label_value(n.node) << "\"} "
        << n.busy_seconds << '\n';
  header(out, "dpushard_node_utilization", "gauge",
         "A node's busy time over serve's uptime (can exceed 1 with several runners).");
  for (const auto& n : nodes)
    out << "dpushard_node_utilization{node=\"" << label_value(n.node) << "\"} "
        << (gauges.uptime_seconds > 0 ? n.busy_seconds / gauges.uptime_seconds : 0.0) << '\n';
  header(out, "dpushard_node_frames_total", "counter", "Frames a node computed.");
  for (const auto& n : nodes)
    out << "dpushard_node_frames_total{node=\"" << label_value(n.node) << "\"} " << n.frames
        << '\n';
  header(out, "dpushard_node_bytes_total", "counter", "Tensor bytes into and out of a node.");
  for (const auto& n : nodes) {
    out << "dpushard_node_bytes_total{node=\"" << label_value(n.node) << "\",direction=\"in\"} "
        << n.bytes_in << '\n';
    out << "dpushard_node_bytes_total{node=\"" << label_value(n.node) << "\",direction=\"out\"} "
        << n.bytes_out << '\n';
  }
  return out.str();
}

}  // namespace dpushard::serve
