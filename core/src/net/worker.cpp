// The worker: accepts connections, owns the sessions, jobs and compute pool, and stops
// gracefully on request, on SHUTDOWN or on SIGINT/SIGTERM.

#include <csignal>
#include <set>

#include "dpushard/net/net.hpp"
#include "job.hpp"
#include "session.hpp"
#include "worker_context.hpp"

namespace dpushard::net {

namespace {

// How long a stopping worker waits for its connections to say goodbye.
constexpr auto kStopGrace = std::chrono::milliseconds(2000);

tcp::endpoint resolve_listen(asio::io_context& io, const std::string& listen) {
  const auto [host, port] = split_host_port(listen, "--listen");
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) return {address, port};
  tcp::resolver resolver(io);
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty())
    throw Error("--listen: cannot resolve '" + host + "': " + ec.message());
  return *results.begin();
}

}  // namespace

class Worker::Impl {
 public:
  explicit Impl(WorkerOptions options)
      : options_(std::move(options)),
        pool_(std::make_unique<asio::thread_pool>(
            static_cast<std::size_t>(std::max(1, options_.threads)))),
        acceptor_(io_),
        signals_(io_),
        stop_deadline_(io_),
        cache_(options_.cache_dir),
        buffers_(std::make_shared<BufferPool>()) {
    const tcp::endpoint endpoint = resolve_listen(io_, options_.listen);
    boost::system::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) throw Error("--listen " + options_.listen + ": " + ec.message());
    const tcp::endpoint bound = acceptor_.local_endpoint();
    address_ = bound.address().to_string() + ":" + std::to_string(bound.port());
    if (options_.name.empty()) options_.name = "worker@" + address_;
    log_ = make_logger(options_.name);
    if (!options_.device)
      options_.device = probe_device(options_.backend, options_.backend_options);
    auto port = std::make_shared<PortShaper>();
    ConnectionOptions connection{options_.limits, options_.heartbeat_interval,
                                 options_.peer_timeout, options_.handshake_timeout, port};
    ctx_ = std::make_unique<WorkerContext>(
        WorkerContext{io_,
                      *pool_,
                      options_,
                      connection,
                      cache_,
                      buffers_,
                      log_,
                      counters_,
                      options_.name,
                      port,
                      {},
                      [this](const std::string& reason) { begin_stop(reason); }});
    if (options_.token.empty())
      log_->warn("event=no_token message=\"any client that can connect may use this worker\"");
  }

  ~Impl() {
    pool_->stop();
    pool_->join();
  }

  void run() {
    log_->info(
        "event=listening address={} backend={} dpu_fingerprint={} dpu_batch={} cache=\"{}\" "
        "threads={}",
        address_, options_.backend, fingerprint_text(options_.device->dpu_fingerprint),
        options_.device->dpu_batch, cache_.dir().string(), options_.threads);
    if (options_.handle_signals) {
      signals_.add(SIGINT);
      signals_.add(SIGTERM);
      signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
        if (!ec) begin_stop(signal == SIGINT ? "SIGINT" : "SIGTERM");
      });
    }
    accept_next();
    io_.run();
    // Frames still computing finish; their results have nowhere to go.
    pool_->join();
    log_->info("event=stopped");
  }

  void stop() {
    asio::post(io_, [this] { begin_stop("stop requested"); });
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  const std::string& address() const { return address_; }

  WorkerCounters counters() const {
    return WorkerCounters{counters_.sessions_accepted.load(),     counters_.sessions_dropped.load(),
                          counters_.upload_bytes_received.load(), counters_.fragments_stored.load(),
                          counters_.frames_computed.load(),       buffers_->cached_bytes()};
  }

 private:
  void accept_next() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
      if (stopping_) return;
      if (ec) {
        log_->warn("event=accept_failed error=\"{}\"", ec.message());
        return accept_next();
      }
      counters_.sessions_accepted.fetch_add(1, std::memory_order_relaxed);
      auto connection = Connection::create(std::move(socket), ctx_->connection, "", buffers_);
      connection->set_label("connection from " + connection->remote_endpoint());
      auto session = std::make_shared<Session>(*ctx_, connection);
      sessions_.insert(session);
      session->start([this](const std::shared_ptr<Session>& ended) {
        sessions_.erase(ended);
        if (stopping_ && sessions_.empty()) stop_deadline_.cancel();
      });
      accept_next();
    });
  }

  void begin_stop(const std::string& reason) {
    if (stopping_) return;
    stopping_ = true;
    log_->info("event=stopping reason=\"{}\"", reason);
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    signals_.cancel(ignored);
    for (auto& [id, job] : ctx_->jobs) job->close();
    ctx_->jobs.clear();
    for (const auto& session : std::set<std::shared_ptr<Session>>(sessions_)) session->shut_down();
    if (sessions_.empty()) return;
    stop_deadline_.expires_after(kStopGrace);
    stop_deadline_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) io_.stop();
    });
  }

  WorkerOptions options_;
  asio::io_context io_;
  std::unique_ptr<asio::thread_pool> pool_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer stop_deadline_;
  FragmentCache cache_;
  std::shared_ptr<BufferPool> buffers_;
  std::shared_ptr<spdlog::logger> log_;
  AtomicCounters counters_;
  std::unique_ptr<WorkerContext> ctx_;
  std::set<std::shared_ptr<Session>> sessions_;
  std::string address_;
  bool stopping_ = false;
};

Worker::Worker(WorkerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Worker::~Worker() = default;
std::uint16_t Worker::port() const { return impl_->port(); }
std::string Worker::address() const { return impl_->address(); }
void Worker::run() { impl_->run(); }
void Worker::stop() { impl_->stop(); }
WorkerCounters Worker::counters() const { return impl_->counters(); }

}  // namespace dpushard::net
