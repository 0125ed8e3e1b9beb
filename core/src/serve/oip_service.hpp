#pragma once
// The protocol's routes over plain request and response structs: no HTTP library here, so
// http_server.cpp is the one file that includes Beast.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dpushard/serve/inference_executor.hpp"
#include "metrics.hpp"
#include "request_queue.hpp"

namespace dpushard::serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query
  std::string authorization;
  std::optional<std::string> inference_header_length;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::optional<std::size_t> inference_header_length;
};

// {"error": message} with `status`.
HttpResponse error_response(int status, const std::string& message);

class OipService {
 public:
  OipService(InferenceExecutor& executor, std::string token, std::size_t queue_capacity);
  // Answers `request` through `respond`, now or later from a queue worker (an infer), exactly
  // once. Every response is counted in the metrics.
  void handle(HttpRequest request, std::function<void(HttpResponse)> respond);
  // A response the server made itself (413, 408, 400 for unparsable HTTP): counted too.
  void count(const HttpResponse& response) { metrics_.count_response(response.status); }

 private:
  using Clock = std::chrono::steady_clock;
  HttpResponse route(const HttpRequest& request, const std::function<void(HttpResponse)>& respond,
                     bool& answered_later);
  void infer(const HttpRequest& request, std::function<void(HttpResponse)> respond);
  bool authorized(const HttpRequest& request) const;

  InferenceExecutor& executor_;
  const std::string token_;
  Metrics metrics_;
  const Clock::time_point started_ = Clock::now();
  RequestQueue queue_;  // last: its workers stop before the rest is destroyed
};

}  // namespace dpushard::serve
