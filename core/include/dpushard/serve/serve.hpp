#pragma once
// `dpushard serve`: one model behind the Open Inference Protocol (KServe v2) over HTTP/REST,
// with the binary tensor data extension and Prometheus /metrics (docs/inference.md).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "dpushard/serve/inference_executor.hpp"

namespace dpushard {

struct ServeOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;  // 0: any free port (on_listening says which)
  std::string token;          // non-empty: every request needs Authorization: Bearer TOKEN
  std::size_t max_body_bytes = 64u << 20;
  std::chrono::milliseconds read_timeout{10000};  // a request must arrive within it
  std::size_t queue_capacity = 256;               // waiting infer requests before 503
  int io_threads = 2;  // a large request being parsed on one leaves the other free
  // Called once the socket listens, with the bound port.
  std::function<void(std::uint16_t)> on_listening;
};

// Serves until SIGINT or SIGTERM; returns the exit code. Throws dpushard::Error when the
// address cannot be bound.
int run_server(InferenceExecutor& executor, const ServeOptions& options);

}  // namespace dpushard
