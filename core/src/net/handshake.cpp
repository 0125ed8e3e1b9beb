// The versioned handshake with HMAC-SHA256 challenge-response in both directions.

#include "dpushard/net/handshake.hpp"

#include "dpushard/net/auth.hpp"

namespace dpushard::net {

namespace {

[[noreturn]] void unexpected(const Message& message, const char* when) {
  throw ProtocolError(ErrorCode::kUnexpectedMessage,
                      std::string(message_type_name(type_of(message))) + " " + when);
}

}  // namespace

void start_client_handshake(const std::shared_ptr<Connection>& connection, const ClientIdentity& me,
                            std::function<void(const std::string&, const AuthOk&)> done) {
  start_client_handshake(connection, me,
                         [done = std::move(done)](const std::string& error, const AuthOk& worker,
                                                  const std::string&) { done(error, worker); });
}

void start_client_handshake(
    const std::shared_ptr<Connection>& connection, const ClientIdentity& me,
    std::function<void(const std::string&, const AuthOk&, const std::string&)> done) {
  struct State {
    std::string token;
    Digest client_nonce = random_nonce();
    std::optional<Digest> server_nonce;
    std::string worker_name;  // from CHALLENGE
    bool finished = false;
    std::function<void(const std::string&, const AuthOk&, const std::string&)> done;
    void finish(const std::string& error, const AuthOk& worker = {}) {
      if (finished) return;
      finished = true;
      done(error, worker, worker_name);
    }
  };
  auto state = std::make_shared<State>();
  state->token = me.token;
  state->done = std::move(done);
  std::weak_ptr<Connection> weak = connection;

  auto on_message = [state, weak](Message&& message) {
    auto conn = weak.lock();
    if (!conn || state->finished) return;
    if (const auto* challenge = std::get_if<Challenge>(&message)) {
      if (state->server_nonce) unexpected(message, "twice");
      state->server_nonce = challenge->nonce;
      state->worker_name = challenge->name;
      conn->send(Auth{client_proof(state->token, challenge->nonce, state->client_nonce)});
    } else if (const auto* ok = std::get_if<AuthOk>(&message)) {
      if (!state->server_nonce) unexpected(message, "before CHALLENGE");
      const Digest expected = server_proof(state->token, state->client_nonce, *state->server_nonce);
      if (!digests_equal(ok->mac, expected)) {
        state->finish("the worker could not prove the shared token");
        conn->fail(ErrorCode::kAuthFailed, "the worker's proof of the token is wrong");
        return;
      }
      conn->set_authenticated();
      state->finish("", *ok);
    } else if (const auto* error = std::get_if<ErrorMsg>(&message)) {
      state->finish("refused: " + std::string(error_code_name(error->code)) + ": " +
                    error->message);
      conn->close("refused by the worker");
    } else {
      unexpected(message, "during the handshake");
    }
  };
  auto on_close = [state](const std::string& reason) {
    state->finish("connection lost during the handshake: " + reason);
  };
  connection->start(std::move(on_message), std::move(on_close));
  connection->send(Hello{kProtocolVersion, me.role, me.name, state->client_nonce,
                         static_cast<std::uint32_t>(connection->heartbeat_interval().count())});
}

void start_server_handshake(const std::shared_ptr<Connection>& connection, const ServerIdentity& me,
                            std::function<void(const Hello&)> on_ready,
                            Connection::CloseHandler on_close) {
  struct State {
    ServerIdentity me;
    Digest server_nonce = random_nonce();
    std::optional<Hello> hello;
    bool ready = false;
    std::function<void(const Hello&)> on_ready;
  };
  auto state = std::make_shared<State>();
  state->me = me;
  state->on_ready = std::move(on_ready);
  std::weak_ptr<Connection> weak = connection;

  auto on_message = [state, weak](Message&& message) {
    auto conn = weak.lock();
    if (!conn || state->ready) return;
    if (auto* hello = std::get_if<Hello>(&message)) {
      if (state->hello) unexpected(message, "twice");
      state->hello = std::move(*hello);
      // The client's timeout may be shorter than ours: heartbeat often enough for it.
      if (state->hello->heartbeat_ms > 0)
        conn->request_heartbeat_interval(std::chrono::milliseconds(state->hello->heartbeat_ms));
      conn->send(Challenge{kProtocolVersion, state->me.name, state->server_nonce});
    } else if (const auto* auth = std::get_if<Auth>(&message)) {
      if (!state->hello) unexpected(message, "before HELLO");
      const Digest expected =
          client_proof(state->me.token, state->server_nonce, state->hello->nonce);
      if (!digests_equal(auth->mac, expected))
        throw ProtocolError(ErrorCode::kAuthFailed,
                            "wrong token from '" + state->hello->name + "'");
      conn->send(AuthOk{server_proof(state->me.token, state->hello->nonce, state->server_nonce),
                        state->me.backend, state->me.device.dpu_fingerprint,
                        state->me.device.dpu_batch});
      conn->set_authenticated();
      state->ready = true;
      state->on_ready(*state->hello);
    } else if (const auto* error = std::get_if<ErrorMsg>(&message)) {
      conn->close("peer sent ERROR " + std::string(error_code_name(error->code)) + ": " +
                  error->message);
    } else {
      unexpected(message, "during the handshake");
    }
  };
  connection->start(std::move(on_message), std::move(on_close));
}

}  // namespace dpushard::net
