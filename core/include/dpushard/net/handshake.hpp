#pragma once
// The versioned handshake and shared-token authentication, both sides. Nothing but these
// messages is accepted on a connection until it completes (Connection enforces it).
//
//   client -> HELLO(version, role, name, client nonce)
//   worker -> CHALLENGE(version, name, server nonce)
//   client -> AUTH(HMAC(token, "dpushard-client" | server nonce | client nonce))
//   worker -> AUTH_OK(HMAC(token, "dpushard-server" | client nonce | server nonce), backend,
//                     DPU fingerprint and batch)

#include <functional>
#include <memory>
#include <string>

#include "dpushard/exec/backend.hpp"
#include "dpushard/net/connection.hpp"

namespace dpushard::net {

struct ClientIdentity {
  std::string name;
  PeerRole role = PeerRole::kOrchestrator;
  std::string token;
};

// Starts `connection` and runs the client side. `done(error, worker)` runs once: error
// empty on success (the connection is then authenticated and the caller installs its own
// handlers; `worker` is the AUTH_OK: backend and DPU), else the reason, including an ERROR
// the worker sent.
void start_client_handshake(
    const std::shared_ptr<Connection>& connection, const ClientIdentity& me,
    std::function<void(const std::string& error, const AuthOk& worker)> done);
// The same, also handing over the name the worker gave in its CHALLENGE (its --name): the
// orchestrator takes a lost node back only under the name it had.
void start_client_handshake(const std::shared_ptr<Connection>& connection, const ClientIdentity& me,
                            std::function<void(const std::string& error, const AuthOk& worker,
                                               const std::string& worker_name)>
                                done);

struct ServerIdentity {
  std::string name;
  std::string backend;
  std::string token;
  DeviceInfo device;  // sent in AUTH_OK
};

// Starts `connection` and runs the worker side. `on_ready(hello)` runs once the peer has
// proved the token. A wrong token, a version mismatch or any other message makes the
// connection send ERROR and close; `on_close` then gets the reason.
void start_server_handshake(const std::shared_ptr<Connection>& connection, const ServerIdentity& me,
                            std::function<void(const Hello& hello)> on_ready,
                            Connection::CloseHandler on_close);

}  // namespace dpushard::net
