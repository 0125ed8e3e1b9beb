// Heartbeats serve the peer's timeout, however short: a client whose peer timeout is 600 ms
// once lost healthy workers, which heartbeat every 500 ms checked every 250 ms.

#include <gtest/gtest.h>

#include <functional>

#include "dpushard/net/client.hpp"
#include "test_client.hpp"

namespace dpushard::net::testing {
namespace {

// A client that connects to a worker as the orchestrator and passes the handshake, then
// only listens: what the handshake said ("not finished" until it ends) and why the
// connection closed (empty while it is open).
struct Client {
  std::shared_ptr<Connection> connection;
  std::string handshake_error = "not finished";
  std::string closed;

  void connect(asio::io_context& io, const WorkerThread& worker, const ConnectionOptions& options) {
    async_connect_to(io, "127.0.0.1:" + std::to_string(worker.port()), 5000ms,
                     [this, options](const std::string& error, tcp::socket socket) {
                       ASSERT_EQ(error, "");
                       connection =
                           Connection::create(std::move(socket), options, "worker", nullptr);
                       start_client_handshake(
                           connection, ClientIdentity{"client", PeerRole::kOrchestrator, "secret"},
                           [this](const std::string& failure, const AuthOk&) {
                             handshake_error = failure;
                             if (!failure.empty()) return;
                             connection->set_message_handler([](Message&&) {});
                             connection->set_close_handler(
                                 [this](const std::string& reason) { closed = reason; });
                           });
                     });
  }

  bool ready() const { return connection && connection->is_open() && handshake_error.empty(); }

  // The handshake passed and the connection is still open; then it is closed.
  void expect_connected_then_close(asio::io_context& io) {
    EXPECT_EQ(handshake_error, "");
    EXPECT_EQ(closed, "");
    ASSERT_TRUE(connection);
    EXPECT_TRUE(connection->is_open());
    connection->close("test over");
    io.run_for(100ms);
  }
};

TEST(Heartbeat, IntervalIsAQuarterOfThePeerTimeoutAtMostAndNeverBelowTheMinimum) {
  asio::io_context io;
  const auto interval = [&](int heartbeat_ms, int timeout_ms) {
    ConnectionOptions options;
    options.heartbeat_interval = std::chrono::milliseconds(heartbeat_ms);
    options.peer_timeout = std::chrono::milliseconds(timeout_ms);
    return Connection::create(tcp::socket(io), options, "test", nullptr)
        ->heartbeat_interval()
        .count();
  };
  EXPECT_EQ(interval(500, 5000), 500);
  EXPECT_EQ(interval(500, 600), 150);
  EXPECT_EQ(interval(500, 20), 10);
}

// A healthy worker with its default 500 ms heartbeat, answering now and then, and a client
// that gives up after 600 ms of silence: the client asks for heartbeats in HELLO and stays
// connected.
TEST(Heartbeat, AShortPeerTimeoutDoesNotDropAHealthyIdleWorker) {
  const auto cache = fresh_dir("heartbeat");
  {
    WorkerThread worker(test_worker_options(cache));
    asio::io_context io;
    ConnectionOptions options;
    options.peer_timeout = std::chrono::milliseconds(600);
    Client client;
    client.connect(io, worker, options);
    // Every 830 ms the worker answers a HAVE_QUERY at another phase of its 250 ms check:
    // its next heartbeat then came up to 750 ms after the answer, past a 600 ms timeout.
    asio::steady_timer query(io);
    std::function<void()> ask = [&] {
      query.expires_after(830ms);
      query.async_wait([&](const boost::system::error_code& ec) {
        if (ec || !client.ready()) return;
        client.connection->send(HaveQuery{{Digest{}}});
        ask();
      });
    };
    ask();
    io.run_for(7s);
    client.expect_connected_then_close(io);
  }
  std::filesystem::remove_all(cache);
}

// A client that gives up after 100 ms (run's smallest --peer-timeout) on an idle worker:
// the worker's first heartbeat tick was armed at connect for its default 500 ms interval
// (a check every 250 ms) and HELLO's 25 ms did not re-arm it, so every such run lost a
// healthy node within the first 250 ms.
TEST(Heartbeat, TheIntervalFromHelloReArmsTheWorkersFirstTick) {
  const auto cache = fresh_dir("heartbeat-rearm");
  {
    WorkerOptions worker_options = test_worker_options(cache);
    worker_options.heartbeat_interval = 500ms;  // `dpushard worker`'s
    WorkerThread worker(worker_options);
    asio::io_context io;
    ConnectionOptions options;
    options.peer_timeout = std::chrono::milliseconds(100);
    Client client;
    client.connect(io, worker, options);
    io.run_for(1500ms);
    client.expect_connected_then_close(io);
  }
  std::filesystem::remove_all(cache);
}

}  // namespace
}  // namespace dpushard::net::testing
