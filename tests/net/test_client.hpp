#pragma once
// Test helpers: a blocking protocol client on a plain POSIX socket (independent of the
// Connection class it tests), a worker running on its own thread, and tiny fragments.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dpushard/base/sha256.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/net/client.hpp"
#include "dpushard/net/net.hpp"
#include "dpushard/net/protocol.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard::net::testing {

using namespace std::chrono_literals;

class TestClient {
 public:
  explicit TestClient(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket() failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      throw std::runtime_error("connect() to 127.0.0.1 failed");
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~TestClient() { ::close(fd_); }
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;

  void send_bytes(const std::vector<std::uint8_t>& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send() failed");
      done += static_cast<std::size_t>(n);
    }
  }
  void send(const Message& message) { send_bytes(encode_frame(message)); }
  void half_close() { ::shutdown(fd_, SHUT_WR); }

  // One frame, or nullopt when the worker closed the connection. Throws on timeout.
  std::optional<Message> receive(std::chrono::milliseconds timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<std::uint8_t> bytes(kHeaderBytes);
    if (!read_exact(bytes.data(), kHeaderBytes, deadline)) return std::nullopt;
    const FrameHeader header = parse_header(bytes, Limits{}, true);
    bytes.resize(kHeaderBytes + header.meta_bytes + header.payload_bytes);
    if (!read_exact(bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes, deadline))
      throw std::runtime_error("connection closed inside a frame");
    return decode_frame(bytes, Limits{}, true);
  }

  // The next message that is not a heartbeat.
  Message expect(std::chrono::milliseconds timeout = 5000ms) {
    for (;;) {
      auto message = receive(timeout);
      if (!message) throw std::runtime_error("connection closed while waiting for a message");
      if (!std::holds_alternative<Heartbeat>(*message)) return std::move(*message);
    }
  }

  // Runs the client handshake; returns the worker's backend, or throws with its ERROR.
  std::string handshake(const std::string& token, PeerRole role = PeerRole::kOrchestrator,
                        const std::string& name = "test-client") {
    const Digest nonce = random_nonce();
    send(Hello{kProtocolVersion, role, name, nonce});
    const Message challenge = expect();
    if (const auto* error = std::get_if<ErrorMsg>(&challenge))
      throw ProtocolError(error->code, error->message);
    const auto& c = std::get<Challenge>(challenge);
    send(Auth{client_proof(token, c.nonce, nonce)});
    const Message reply = expect();
    if (const auto* error = std::get_if<ErrorMsg>(&reply))
      throw ProtocolError(error->code, error->message);
    const auto& ok = std::get<AuthOk>(reply);
    if (!digests_equal(ok.mac, server_proof(token, nonce, c.nonce)))
      throw std::runtime_error("worker proof is wrong");
    last_auth_ok_ = ok;
    return ok.backend;
  }
  // The AUTH_OK of the last handshake (backend and DPU).
  const AuthOk& last_auth_ok() const { return last_auth_ok_; }

  // The ERROR the worker sends before dropping this connection, and then the close.
  ErrorMsg expect_dropped(std::chrono::milliseconds timeout = 5000ms) {
    const Message message = expect(timeout);
    const auto* error = std::get_if<ErrorMsg>(&message);
    if (error == nullptr) throw std::runtime_error("expected ERROR");
    if (receive(timeout)) throw std::runtime_error("connection stayed open after ERROR");
    return *error;
  }

  // True when the worker closes the connection within `timeout` (frames are skipped).
  bool closed_within(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::uint8_t byte = 0;
    for (;;) {
      try {
        if (!read_exact(&byte, 1, deadline)) return true;
      } catch (const std::runtime_error&) {
        return false;
      }
    }
  }

 private:
  AuthOk last_auth_ok_;
  // False on a clean EOF before the first byte.
  bool read_exact(std::uint8_t* out, std::size_t size,
                  std::chrono::steady_clock::time_point deadline) {
    std::size_t done = 0;
    while (done < size) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw std::runtime_error("timed out waiting for the worker");
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      const ssize_t n = ::recv(fd_, out + done, size - done, 0);
      if (n == 0) {
        if (done == 0) return false;
        throw std::runtime_error("connection closed inside a frame");
      }
      if (n < 0) return false;  // reset by the worker
      done += static_cast<std::size_t>(n);
    }
    return true;
  }

  int fd_ = -1;
};

// A worker serving on 127.0.0.1 from its own thread.
class WorkerThread {
 public:
  explicit WorkerThread(WorkerOptions options) : worker_(std::move(options)) {
    thread_ = std::thread([this] { worker_.run(); });
  }
  ~WorkerThread() {
    worker_.stop();
    thread_.join();
  }
  Worker& worker() { return worker_; }
  std::uint16_t port() const { return worker_.port(); }

 private:
  Worker worker_;
  std::thread thread_;
};

inline std::filesystem::path fresh_dir(const std::string& name) {
  std::random_device random;
  auto dir = std::filesystem::temp_directory_path() /
             ("dpushard-test-" + name + "-" + std::to_string(random()));
  std::filesystem::create_directories(dir);
  return dir;
}

inline WorkerOptions test_worker_options(const std::filesystem::path& cache,
                                         const std::string& token = "secret") {
  WorkerOptions options;
  options.listen = "127.0.0.1:0";
  options.cache_dir = cache;
  options.token = token;
  options.threads = 2;
  options.handshake_timeout = 2000ms;
  options.peer_timeout = 3000ms;
  options.heartbeat_interval = 200ms;
  return options;
}

// input [1, 6, 6, in_c] at in_fp -> 3x3 conv + relu -> [1, 6, 6, out_c] at out_fp.
inline Graph tiny_conv(const std::string& name, std::int64_t in_c, int in_fp, std::int64_t out_c,
                       int out_fp, std::uint64_t seed) {
  GraphBuilder b(name);
  const Value x = b.input(name + "_in", {1, 6, 6, in_c}, in_fp);
  const QTensor wq = random_qtensor("w", {out_c, 3, 3, in_c}, 0, seed);
  const Value w = b.constant(name + "_w", {out_c, 3, 3, in_c}, wq.data, 7);
  Conv2dSpec spec;
  spec.nonlinear = Nonlinear::Relu;
  b.conv2d(name + "_conv", x, w, std::nullopt, spec, out_fp);
  return b.finish();
}

inline std::vector<std::uint8_t> bytes_of(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

inline Digest sha_of(const std::string& text) {
  return sha256(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

// Uploads `bytes` in chunks of `chunk` and waits for UPLOAD_DONE.
inline void upload(TestClient& client, const std::string& bytes, std::size_t chunk = 1000) {
  const Digest sha = sha_of(bytes);
  for (std::size_t offset = 0; offset < bytes.size(); offset += chunk) {
    const std::size_t n = std::min(chunk, bytes.size() - offset);
    UploadChunk c{sha, bytes.size(), offset,
                  std::vector<std::int8_t>(bytes.begin() + static_cast<long>(offset),
                                           bytes.begin() + static_cast<long>(offset + n))};
    client.send(c);
  }
  const Message done = client.expect();
  if (!std::holds_alternative<UploadDone>(done) || std::get<UploadDone>(done).sha != sha)
    throw std::runtime_error("expected UPLOAD_DONE");
}

}  // namespace dpushard::net::testing
