#pragma once
// The client side of the dpushard protocol (docs/protocol.md), for whatever talks to workers
// from outside the net module: the orchestrator (cluster), the transport benchmark and the
// tests. A `Connection` on an Asio io_context, the client handshake with the shared token
// (`start_client_handshake`), the HMAC proofs it uses, and the structured loggers.
//
//   auto connection = Connection::create(std::move(socket), options, "head", pool);
//   start_client_handshake(connection, {"head", PeerRole::kOrchestrator, token},
//                          [](const std::string& error, const AuthOk& worker) { ... });

#include "dpushard/net/auth.hpp"        // IWYU pragma: export
#include "dpushard/net/connection.hpp"  // IWYU pragma: export
#include "dpushard/net/cpu_time.hpp"    // IWYU pragma: export
#include "dpushard/net/handshake.hpp"   // IWYU pragma: export
#include "dpushard/net/log.hpp"         // IWYU pragma: export
