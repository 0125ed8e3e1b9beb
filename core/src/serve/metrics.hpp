#pragma once
// The server's counters, rendered in Prometheus text exposition format (version 0.0.4).

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "dpushard/serve/inference_executor.hpp"

namespace dpushard::serve {

// Outcomes of an infer request, the `outcome` label of dpushard_inference_requests_total.
enum class InferOutcome { Success, BadRequest, QueueFull, NotReady, Failed };

class Metrics {
 public:
  // Every HTTP response, by status code (dpushard_http_requests_total{code}).
  void count_response(int status);
  // An infer request's outcome; `seconds` from its arrival to its response (successes only
  // enter the latency histogram).
  void count_infer(InferOutcome outcome, double seconds);

  struct Gauges {
    std::size_t queue_depth = 0;
    std::size_t queue_capacity = 0;
    std::size_t in_flight = 0;
    double uptime_seconds = 0;
  };
  std::string render(const Gauges& gauges, const std::vector<NodeStats>& nodes) const;

  // Upper bounds of the latency histogram's buckets, in seconds (then +Inf).
  static constexpr std::array<double, 14> kLatencyBuckets = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

 private:
  mutable std::mutex mutex_;
  std::map<int, std::uint64_t> responses_;
  std::map<InferOutcome, std::uint64_t> infers_;
  std::array<std::uint64_t, kLatencyBuckets.size()> bucket_counts_{};
  std::uint64_t latency_count_ = 0;
  double latency_sum_ = 0;
};

}  // namespace dpushard::serve
