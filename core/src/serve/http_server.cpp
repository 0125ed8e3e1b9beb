// The HTTP/1.1 server under `serve` (Boost.Beast, the one file that includes it): accepts
// connections, reads each request within the read timeout and the body limit, hands it to
// OipService and writes its answer, keeping the connection alive as the client asks.

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "dpushard/base/error.hpp"
#include "dpushard/serve/serve.hpp"
#include "oip_service.hpp"

namespace dpushard {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using serve::HttpRequest;
using serve::HttpResponse;
using serve::OipService;

constexpr auto kWriteTimeout = std::chrono::seconds(30);
// After an error that closes the connection, what the client still sends is read and
// dropped for this long, so that closing does not reset the connection before the client
// has read the error.
constexpr auto kDrainTime = std::chrono::seconds(2);

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, OipService& service, const ServeOptions& options)
      : stream_(std::move(socket)),
        deadline_(stream_.get_executor()),
        service_(service),
        options_(options) {}

  void start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

 private:
  // The read timeout covers the whole request, header and body: a slow client gets 408.
  void arm_deadline() {
    const std::uint64_t read = ++read_id_;
    deadline_.expires_after(options_.read_timeout);
    deadline_.async_wait([self = shared_from_this(), read](beast::error_code ec) {
      if (ec || read != self->read_id_) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void read_header() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    parser_->header_limit(64 * 1024);
    timed_out_ = false;
    arm_deadline();
    stream_.expires_never();
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    const auto& req = parser_->get();
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      // curl waits a second for this before sending a body of more than 1 KiB.
      auto go_on = std::make_shared<http::response<http::empty_body>>(http::status::continue_,
                                                                      req.version());
      stream_.expires_after(kWriteTimeout);
      http::async_write(stream_, *go_on,
                        [self = shared_from_this(), go_on](beast::error_code e, std::size_t) {
                          if (e) return self->close();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    stream_.expires_never();
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    ++read_id_;
    deadline_.cancel();
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    HttpRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    request.authorization = std::string(req[http::field::authorization]);
    if (const auto it = req.find("Inference-Header-Content-Length"); it != req.end())
      request.inference_header_length = std::string(it->value());
    request.body = std::move(req.body());
    service_.handle(std::move(request), [self = shared_from_this()](HttpResponse response) {
      // From a queue worker too: the write happens on this connection's strand.
      asio::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->write(std::move(response), false);
      });
    });
  }

  void on_read_error(beast::error_code ec) {
    ++read_id_;
    deadline_.cancel();
    const bool started = buffer_.size() > 0 || (parser_ && parser_->got_some());
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return close();
    if (ec == http::error::body_limit)
      return refuse(
          413, "the request body exceeds " + std::to_string(options_.max_body_bytes) + " bytes");
    if (ec == http::error::header_limit) return refuse(431, "the request header is too large");
    if (timed_out_) {
      if (!started) return close();  // an idle keep-alive connection
      return refuse(408, "the request did not arrive within " +
                             std::to_string(options_.read_timeout.count()) + " ms");
    }
    if (ec.category() == http::make_error_code(http::error::bad_target).category() ||
        ec == http::error::partial_message)
      return refuse(400, "malformed HTTP request: " + ec.message());
    close();
  }

  // An error answered on a connection that then closes.
  void refuse(int status, const std::string& message) {
    version_ = 11;
    HttpResponse response = serve::error_response(status, message);
    service_.count(response);
    write(std::move(response), true);
  }

  void write(HttpResponse r, bool then_close) {
    response_ = {};
    response_.version(version_);
    response_.result(static_cast<unsigned>(r.status));
    response_.set(http::field::server, "dpushard");
    response_.set(http::field::content_type, r.content_type);
    if (r.inference_header_length)
      response_.set("Inference-Header-Content-Length", std::to_string(*r.inference_header_length));
    response_.body() = std::move(r.body);
    response_.keep_alive(keep_alive_ && !then_close);
    response_.prepare_payload();
    stream_.expires_after(kWriteTimeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this(), then_close](beast::error_code ec, std::size_t) {
                        if (ec) return self->close();
                        if (then_close || !self->response_.keep_alive()) return self->drain();
                        self->read_header();
                      });
  }

  void drain() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTime);
    drain_some();
  }

  void drain_some() {
    stream_.async_read_some(asio::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->drain_some();
                            });
  }

  void close() {
    ++read_id_;
    deadline_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  asio::steady_timer deadline_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  std::array<char, 4096> discard_{};
  OipService& service_;
  const ServeOptions& options_;
  std::uint64_t read_id_ = 0;
  bool timed_out_ = false;
  bool keep_alive_ = true;
  unsigned version_ = 11;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& io, tcp::endpoint endpoint, OipService& service,
           const ServeOptions& options)
      : io_(io), acceptor_(asio::make_strand(io)), service_(service), options_(options) {
    beast::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
      throw Error("serve: cannot listen on " + endpoint.address().to_string() + ":" +
                  std::to_string(endpoint.port()) + ": " + ec.message());
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void accept() {
    acceptor_.async_accept(asio::make_strand(io_), [self = shared_from_this()](beast::error_code ec,
                                                                               tcp::socket socket) {
      if (!ec)
        std::make_shared<Session>(std::move(socket), self->service_, self->options_)->start();
      else if (ec == asio::error::operation_aborted)
        return;
      self->accept();
    });
  }

 private:
  asio::io_context& io_;
  tcp::acceptor acceptor_;
  OipService& service_;
  const ServeOptions& options_;
};

}  // namespace

int run_server(InferenceExecutor& executor, const ServeOptions& options) {
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.host, ec);
  if (ec) throw Error("serve: '" + options.host + "' is not an IP address");
  const int io_threads = std::max(1, options.io_threads);
  asio::io_context io(io_threads);
  OipService service(executor, options.token, options.queue_capacity);
  auto listener =
      std::make_shared<Listener>(io, tcp::endpoint(address, options.port), service, options);
  listener->accept();
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int signal) {
    spdlog::info("serve: signal {}, stopping", signal);
    io.stop();
  });
  if (options.on_listening) options.on_listening(listener->port());
  std::vector<std::thread> threads;
  for (int i = 1; i < io_threads; ++i) threads.emplace_back([&] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace dpushard
