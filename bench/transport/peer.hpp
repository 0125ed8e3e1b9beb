#pragma once
// The far end of bench_transport: a forked process holding the receiving side of one
// protocol connection and one raw TCP socket, driven by commands over a control socket.
//
//   kProtoStream  count tensors arrive over the protocol; the peer answers with one tiny
//                 tensor after the last one (the sender's clock stops on it).
//   kProtoEcho    every tensor is sent straight back (ping-pong).
//   kRawStream    count messages of `bytes` are read with blocking recv into one kept
//                 buffer; one byte goes back after the last.
//   kRawEcho      count messages of `bytes` are read and written back.
// The peer answers each command with one byte once it is ready for the transfer.

#include <sys/types.h>

#include <cstdint>

namespace dpushard::net::bench {

enum class PeerOp : std::uint32_t { kProtoStream, kProtoEcho, kRawStream, kRawEcho, kQuit };

struct PeerCommand {
  PeerOp op;
  std::uint32_t reserved = 0;
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;
};

// Connected socket pairs (protocol, raw, control) and the forked peer process.
class Peer {
 public:
  // Forks the peer. Call with no other threads running.
  Peer();
  ~Peer();  // sends kQuit and waits for the process
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  int protocol_fd() const { return protocol_fd_; }  // this side's protocol socket
  int raw_fd() const { return raw_fd_; }
  // Sends a command and waits until the peer is ready for it.
  void command(const PeerCommand& command);

 private:
  int protocol_fd_ = -1;
  int raw_fd_ = -1;
  int control_fd_ = -1;
  pid_t pid_ = -1;
};

// Blocking helpers on raw sockets; throw std::runtime_error on failure.
void send_all(int fd, const void* data, std::size_t size);
void recv_all(int fd, void* data, std::size_t size);

}  // namespace dpushard::net::bench
