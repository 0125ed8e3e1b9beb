#pragma once
// What the parts of a worker share. Everything but the counters is used on the io thread
// only; compute tasks on the pool post their results back to it.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "dpushard/net/buffer_pool.hpp"
#include "dpushard/net/connection.hpp"
#include "dpushard/net/log.hpp"
#include "dpushard/net/net.hpp"
#include "fragment_cache.hpp"

namespace dpushard::net {

class Job;

struct AtomicCounters {
  std::atomic<std::uint64_t> sessions_accepted{0};
  std::atomic<std::uint64_t> sessions_dropped{0};
  std::atomic<std::uint64_t> upload_bytes_received{0};
  std::atomic<std::uint64_t> fragments_stored{0};
  std::atomic<std::uint64_t> frames_computed{0};
};

struct WorkerContext {
  asio::io_context& io;
  asio::thread_pool& pool;
  const WorkerOptions& options;
  ConnectionOptions connection;
  FragmentCache& cache;
  std::shared_ptr<BufferPool> buffers;
  std::shared_ptr<spdlog::logger> log;
  AtomicCounters& counters;
  std::string name;  // this worker's name in handshakes
  // This node's emulated network port (also in `connection.port`): LOAD configures it
  // with the job's link, the end of the last job unshapes it.
  std::shared_ptr<PortShaper> port;
  std::map<std::uint64_t, std::shared_ptr<Job>> jobs;
  std::function<void(const std::string& reason)> request_stop;
};

}  // namespace dpushard::net
