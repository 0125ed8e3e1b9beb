// The forked far end of bench_transport (see peer.hpp).

#include "transport/peer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dpushard/net/client.hpp"

namespace dpushard::net::bench {
namespace {

// Two ends of one loopback TCP connection, Nagle off on both (as the protocol's sockets).
std::pair<int, int> loopback_pair() {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) ||
      ::listen(listener, 1) ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length))
    throw std::runtime_error("bench: loopback listener failed");
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  if (client < 0 || ::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address))
    throw std::runtime_error("bench: loopback connect failed");
  const int server = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  if (server < 0) throw std::runtime_error("bench: loopback accept failed");
  const int one = 1;
  ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return {client, server};
}

void send_ready(int control_fd) {
  const char ready = 'r';
  send_all(control_fd, &ready, 1);
}

// The peer process: never returns.
[[noreturn]] void run_peer(int protocol_fd, int raw_fd, int control_fd) {
  int status = 0;
  try {
    asio::io_context io;
    auto guard = asio::make_work_guard(io);
    tcp::socket socket(io);
    socket.assign(tcp::v4(), protocol_fd);
    auto pool = std::make_shared<BufferPool>(std::size_t{1} << 30);
    ConnectionOptions options;
    options.peer_timeout = std::chrono::milliseconds(600000);
    options.heartbeat_interval = std::chrono::milliseconds(10000);
    auto connection = Connection::create(std::move(socket), options, "peer", pool);
    connection->set_authenticated();
    Connection* const conn = connection.get();
    std::atomic<bool> echo{false};
    std::atomic<std::uint64_t> left{0};
    QTensor ack_tensor;
    ack_tensor.name = "ack";
    ack_tensor.shape = {1};
    ack_tensor.data = {0};
    const auto ack = std::make_shared<const QTensor>(std::move(ack_tensor));
    connection->start(
        [&, conn](Message&& message) {
          auto* tensor = std::get_if<TensorMsg>(&message);
          if (tensor == nullptr) return;
          if (echo.load(std::memory_order_acquire)) {
            // The echoed tensor's buffer goes back to the pool once it is written.
            auto* owned = new QTensor(std::move(tensor->tensor));
            std::shared_ptr<const QTensor> out(owned, [pool](const QTensor* t) {
              pool->give(std::move(const_cast<QTensor*>(t)->data));
              delete t;
            });
            conn->send_tensor(0, tensor->frame, 0, 0, std::move(out));
            return;
          }
          pool->give(std::move(tensor->tensor.data));
          if (left.fetch_sub(1, std::memory_order_acq_rel) == 1)
            conn->send_tensor(0, tensor->frame, 0, 0, ack);
        },
        [](const std::string&) {});
    std::thread io_thread([&io] { io.run(); });

    std::vector<std::int8_t> buffer;
    for (;;) {
      PeerCommand command{};
      recv_all(control_fd, &command, sizeof command);
      if (command.op == PeerOp::kQuit) break;
      switch (command.op) {
        case PeerOp::kProtoStream:
          echo.store(false, std::memory_order_release);
          left.store(command.count, std::memory_order_release);
          send_ready(control_fd);
          break;
        case PeerOp::kProtoEcho:
          echo.store(true, std::memory_order_release);
          send_ready(control_fd);
          break;
        case PeerOp::kRawStream: {
          buffer.resize(command.bytes);
          send_ready(control_fd);
          for (std::uint64_t i = 0; i < command.count; ++i)
            recv_all(raw_fd, buffer.data(), buffer.size());
          const char done = 'd';
          send_all(raw_fd, &done, 1);
          break;
        }
        case PeerOp::kRawEcho:
          buffer.resize(command.bytes);
          send_ready(control_fd);
          for (std::uint64_t i = 0; i < command.count; ++i) {
            recv_all(raw_fd, buffer.data(), buffer.size());
            send_all(raw_fd, buffer.data(), buffer.size());
          }
          break;
        case PeerOp::kQuit:
          break;
      }
    }
    asio::post(io, [conn] { conn->close("done"); });
    guard.reset();
    io.stop();
    io_thread.join();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench peer: %s\n", e.what());
    status = 1;
  }
  std::fflush(stderr);
  ::_exit(status);
}

}  // namespace

void send_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::send(fd, bytes + done, size - done, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("bench: send failed");
    done += static_cast<std::size_t>(n);
  }
}

void recv_all(int fd, void* data, std::size_t size) {
  auto* bytes = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::recv(fd, bytes + done, size - done, 0);
    if (n <= 0) throw std::runtime_error("bench: recv failed (peer gone?)");
    done += static_cast<std::size_t>(n);
  }
}

Peer::Peer() {
  const auto [protocol_here, protocol_there] = loopback_pair();
  const auto [raw_here, raw_there] = loopback_pair();
  int control[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, control) != 0)
    throw std::runtime_error("bench: socketpair failed");
  std::fflush(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("bench: fork failed");
  if (pid_ == 0) {
    ::close(protocol_here);
    ::close(raw_here);
    ::close(control[0]);
    run_peer(protocol_there, raw_there, control[1]);
  }
  ::close(protocol_there);
  ::close(raw_there);
  ::close(control[1]);
  protocol_fd_ = protocol_here;
  raw_fd_ = raw_here;
  control_fd_ = control[0];
}

Peer::~Peer() {
  try {
    PeerCommand quit{};
    quit.op = PeerOp::kQuit;
    send_all(control_fd_, &quit, sizeof quit);
  } catch (const std::exception&) {
    // the peer is gone already; waitpid below reaps it
  }
  int status = 0;
  ::waitpid(pid_, &status, 0);
  ::close(protocol_fd_);
  ::close(raw_fd_);
  ::close(control_fd_);
}

void Peer::command(const PeerCommand& command) {
  send_all(control_fd_, &command, sizeof command);
  char ready = 0;
  recv_all(control_fd_, &ready, 1);
}

}  // namespace dpushard::net::bench
