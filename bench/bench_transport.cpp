// bench_transport: int8 tensors between two processes over loopback through the dpushard
// protocol (net::Connection: framed, scatter-gather writes, payloads received into pooled
// buffers) against a raw-socket baseline (plain blocking send/recv of the same bytes on a
// second loopback connection between the same two processes), both measured in the same run.
//
//   BM_Throughput/SIZE : tensors of SIZE bytes streamed one way; the clock stops when the
//                        receiving process acknowledges the last one (a 1-byte reply on both
//                        paths). Counters proto_GBps, raw_GBps, ratio = proto / raw (target
//                        >= 0.9 from 1 MB up).
//   BM_Hop/SIZE        : 200 ping-pongs of one small tensor; counters proto_hop_us,
//                        raw_hop_us and overhead_us = the protocol's extra cost per hop.
//
// The receiving side is a forked process (transport/peer.hpp): its own io_context thread
// for the protocol, its main thread for the raw socket. The manual time is the protocol's.
// Counters use the fastest of 9 alternating repetitions of each side per iteration (robust
// on a shared machine).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dpushard/net/client.hpp"
#include "transport/peer.hpp"

namespace dpushard::net {
namespace {

using bench::Peer;
using bench::PeerOp;
using bench::recv_all;
using bench::send_all;

using BenchClock = std::chrono::steady_clock;

double seconds_since(BenchClock::time_point start) {
  return std::chrono::duration<double>(BenchClock::now() - start).count();
}

// Waits until `count` events were signalled.
class Countdown {
 public:
  void reset(std::size_t count) {
    std::lock_guard lock(mutex_);
    left_ = count;
  }
  void tick() {
    std::lock_guard lock(mutex_);
    if (left_ > 0 && --left_ == 0) done_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    if (!done_.wait_for(lock, std::chrono::seconds(60), [this] { return left_ == 0; }))
      throw std::runtime_error("transfer timed out");
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::size_t left_ = 0;
};

// This process's end of the protocol connection to the peer, on its own io_context thread.
class ProtocolSide {
 public:
  explicit ProtocolSide(Peer& peer)
      : peer_(peer), pool_(std::make_shared<BufferPool>(std::size_t{1} << 30)) {
    tcp::socket socket(io_);
    socket.assign(tcp::v4(), ::dup(peer.protocol_fd()));
    ConnectionOptions options;
    options.peer_timeout = std::chrono::milliseconds(600000);
    options.heartbeat_interval = std::chrono::milliseconds(10000);
    connection_ = Connection::create(std::move(socket), options, "sender", pool_);
    connection_->set_authenticated();
    // Stream mode: the only message back is the peer's acknowledgement. Ping-pong mode:
    // each echo is bounced straight back until the round trips are done, so a ping-pong
    // involves only the two processes' io threads, as the raw one involves two threads.
    connection_->start(
        [this](Message&& message) {
          auto* tensor = std::get_if<TensorMsg>(&message);
          if (tensor == nullptr) return;
          if (!ping_ || --rounds_left_ == 0) {
            pool_->give(std::move(tensor->tensor.data));
            done_.tick();
            return;
          }
          connection_->send_tensor(0, tensor->frame + 1, 0, 0,
                                   std::make_shared<const QTensor>(std::move(tensor->tensor)));
        },
        [](const std::string&) {});
    thread_ = std::thread([this] { io_.run(); });
  }

  ~ProtocolSide() {
    asio::post(io_, [this] { connection_->close("done"); });
    guard_.reset();
    io_.stop();
    thread_.join();
  }
  ProtocolSide(const ProtocolSide&) = delete;
  ProtocolSide& operator=(const ProtocolSide&) = delete;

  // Streams `count` tensors; seconds until the peer acknowledged the last one.
  double stream(const std::shared_ptr<const QTensor>& tensor, std::size_t count) {
    peer_.command({PeerOp::kProtoStream, 0, tensor->data.size(), count});
    ping_ = false;
    done_.reset(1);
    const auto start = BenchClock::now();
    asio::post(io_, [this, tensor, count] {
      for (std::size_t i = 0; i < count; ++i) connection_->send_tensor(0, i, 0, 0, tensor);
    });
    done_.wait();
    return seconds_since(start);
  }

  // `rounds` ping-pongs of `tensor`; seconds in total.
  double ping_pong(const std::shared_ptr<const QTensor>& tensor, std::size_t rounds) {
    peer_.command({PeerOp::kProtoEcho, 0, tensor->data.size(), rounds});
    ping_ = true;
    done_.reset(1);
    const auto start = BenchClock::now();
    asio::post(io_, [this, tensor, rounds] {
      rounds_left_ = rounds;
      connection_->send_tensor(0, 0, 0, 0, tensor);
    });
    done_.wait();
    return seconds_since(start);
  }

 private:
  Peer& peer_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<Connection> connection_;
  std::thread thread_;
  std::atomic<bool> ping_{false};
  std::size_t rounds_left_ = 0;  // io thread only
  Countdown done_;
};

// This process's end of the raw loopback socket to the peer: plain blocking send/recv.
class RawSide {
 public:
  explicit RawSide(Peer& peer) : peer_(peer) {}

  double stream(const std::vector<std::int8_t>& bytes, std::size_t count) {
    peer_.command({PeerOp::kRawStream, 0, bytes.size(), count});
    const auto start = BenchClock::now();
    for (std::size_t i = 0; i < count; ++i) send_all(peer_.raw_fd(), bytes.data(), bytes.size());
    char ack = 0;
    recv_all(peer_.raw_fd(), &ack, 1);
    return seconds_since(start);
  }

  double ping_pong(const std::vector<std::int8_t>& bytes, std::size_t rounds) {
    peer_.command({PeerOp::kRawEcho, 0, bytes.size(), rounds});
    back_.resize(bytes.size());
    const auto start = BenchClock::now();
    for (std::size_t i = 0; i < rounds; ++i) {
      send_all(peer_.raw_fd(), bytes.data(), bytes.size());
      recv_all(peer_.raw_fd(), back_.data(), back_.size());
    }
    return seconds_since(start);
  }

 private:
  Peer& peer_;
  std::vector<std::int8_t> back_;
};

std::shared_ptr<const QTensor> tensor_of(std::int64_t bytes) {
  return std::make_shared<const QTensor>(random_qtensor("t", {bytes}, 0, 1));
}

// The machine may be shared: each iteration alternates protocol and raw transfers several
// times and keeps the fastest of each, so both see the same conditions and the ratio is
// not decided by whichever happened to run during someone else's compile.
constexpr int kRepeats = 9;

void BM_Throughput(benchmark::State& state) {
  const std::int64_t size = state.range(0);
  // About 64 MB per transfer, and at least two tensors so the stream pipelines.
  const auto count =
      static_cast<std::size_t>(std::max<std::int64_t>(2, (std::int64_t{64} << 20) / size));
  const auto tensor = tensor_of(size);
  Peer peer;  // forked before any thread of this process starts
  ProtocolSide protocol(peer);
  RawSide raw(peer);
  protocol.stream(tensor, count);  // warm up: the pool holds the buffers from now on
  raw.stream(tensor->data, count);
  double proto_best = 1e30, raw_best = 1e30;
  for (auto _ : state) {
    double proto_iteration = 1e30;
    for (int r = 0; r < kRepeats; ++r) {
      proto_iteration = std::min(proto_iteration, protocol.stream(tensor, count));
      raw_best = std::min(raw_best, raw.stream(tensor->data, count));
    }
    proto_best = std::min(proto_best, proto_iteration);
    state.SetIterationTime(proto_iteration);
  }
  const double bytes = static_cast<double>(size) * static_cast<double>(count);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
  state.counters["proto_GBps"] = bytes / proto_best / 1e9;
  state.counters["raw_GBps"] = bytes / raw_best / 1e9;
  state.counters["ratio"] = raw_best / proto_best;
  state.counters["tensors"] = static_cast<double>(count);
}
BENCHMARK(BM_Throughput)
    ->Arg(4 << 10)
    ->Arg(64 << 10)
    ->Arg(256 << 10)
    ->Arg(1 << 20)
    ->Arg(4 << 20)
    ->Arg(16 << 20)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

void BM_Hop(benchmark::State& state) {
  const std::int64_t size = state.range(0);
  constexpr std::size_t kRounds = 200;
  const auto tensor = tensor_of(size);
  Peer peer;  // forked before any thread of this process starts
  ProtocolSide protocol(peer);
  RawSide raw(peer);
  protocol.ping_pong(tensor, 20);
  raw.ping_pong(tensor->data, 20);
  double proto_best = 1e30, raw_best = 1e30;
  for (auto _ : state) {
    double proto_iteration = 1e30;
    for (int r = 0; r < kRepeats; ++r) {
      proto_iteration = std::min(proto_iteration, protocol.ping_pong(tensor, kRounds));
      raw_best = std::min(raw_best, raw.ping_pong(tensor->data, kRounds));
    }
    proto_best = std::min(proto_best, proto_iteration);
    state.SetIterationTime(proto_iteration);
  }
  const double hops = 2.0 * kRounds;
  state.counters["proto_hop_us"] = proto_best / hops * 1e6;
  state.counters["raw_hop_us"] = raw_best / hops * 1e6;
  state.counters["overhead_us"] = (proto_best - raw_best) / hops * 1e6;
}
BENCHMARK(BM_Hop)
    ->Arg(64)
    ->Arg(1 << 10)
    ->Arg(16 << 10)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace dpushard::net

BENCHMARK_MAIN();
