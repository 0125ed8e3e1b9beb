#pragma once
// The dpushard worker: serves plan fragments over TCP (docs/protocol.md). It caches
// fragments by sha256 on disk, runs frames on a thread pool with one bounded queue per
// fragment, and sends each output straight to the node that consumes it.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "dpushard/exec/backend.hpp"
#include "dpushard/net/protocol.hpp"

namespace dpushard::net {

struct WorkerOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0 picks a free one
  std::string backend = "ref";
  BackendOptions backend_options;  // the backend's settings and shared state; threads per fragment
  // The DPU reported in the handshake; empty: probe_device(backend) when the worker starts.
  std::optional<DeviceInfo> device;
  std::filesystem::path cache_dir;    // empty: a private temporary folder removed at exit
  std::string token;                  // shared secret; empty only when no token file is used
  int threads = 1;                    // compute threads (the io thread is separate)
  std::uint32_t queue_capacity = 64;  // frames waiting per fragment
  Limits limits;
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds peer_timeout{5000};
  std::chrono::milliseconds handshake_timeout{5000};
  std::chrono::milliseconds connect_timeout{5000};
  bool handle_signals = false;  // SIGINT / SIGTERM stop the worker gracefully
  std::string name;             // for logs and handshakes; default "worker@HOST:PORT"
};

struct WorkerCounters {
  std::uint64_t sessions_accepted = 0;
  std::uint64_t sessions_dropped = 0;  // closed for a protocol violation or a wrong token
  std::uint64_t upload_bytes_received = 0;
  std::uint64_t fragments_stored = 0;
  std::uint64_t frames_computed = 0;
  std::uint64_t pooled_buffer_bytes = 0;  // tensor buffers kept for reuse (none when idle)
};

class Worker {
 public:
  // Binds the listening socket; throws dpushard::Error naming the address on failure.
  explicit Worker(WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  std::uint16_t port() const;
  std::string address() const;  // HOST:PORT actually bound

  // Serves until stop(), a SHUTDOWN message or (with handle_signals) SIGINT/SIGTERM.
  void run();
  // Thread-safe: closes every connection with ERROR shutting_down and ends run().
  void stop();
  WorkerCounters counters() const;  // thread-safe

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The shared token in `path`: its content without trailing whitespace. Throws
// dpushard::Error naming the file when it is missing or empty.
std::string read_token_file(const std::filesystem::path& path);

}  // namespace dpushard::net
