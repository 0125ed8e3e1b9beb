// A protocol connection: framed reads with size checks, gathered writes, heartbeats.

#include "dpushard/net/connection.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <span>

namespace dpushard::net {

namespace {

// Payloads are read in slices so a long transfer still counts as a live peer.
constexpr std::size_t kPayloadSlice = std::size_t{8} << 20;
// Bytes asked for per read_some when parsing headers and metadata (larger metadata grows
// the staging buffer up to the metadata limit, once its header has been checked).
constexpr std::size_t kStagingBytes = 64 << 10;
// Messages gathered into one write.
constexpr std::size_t kMaxGather = 64;
// Bytes per turn in the emulated port's bucket: small enough that connections sharing a
// port interleave finely (64 KiB is 0.5 ms at 1 Gbit/s), large enough to cost few timers.
constexpr std::size_t kPacedSlice = 64 << 10;
// Waits shorter than this are not worth a timer.
constexpr auto kPaceSlack = std::chrono::microseconds(20);
// How long a failing connection waits for its last ERROR to be written.
constexpr auto kCloseGrace = std::chrono::milliseconds(1000);

// Asio's default completion condition (transfer_all) offers at most 64 KiB to each system
// call; a megabyte tensor would then cost dozens of reads and writes. This one offers all
// that is left, as a blocking send or recv of the whole buffer would.
std::size_t whole_buffer(const boost::system::error_code& ec, std::size_t) {
  return ec ? 0 : std::size_t{1} << 30;
}

}  // namespace

std::shared_ptr<Connection> Connection::create(tcp::socket socket, const ConnectionOptions& options,
                                               std::string label,
                                               std::shared_ptr<BufferPool> pool) {
  return std::shared_ptr<Connection>(
      new Connection(std::move(socket), options, std::move(label), std::move(pool)));
}

Connection::Connection(tcp::socket socket, const ConnectionOptions& options, std::string label,
                       std::shared_ptr<BufferPool> pool)
    : socket_(std::move(socket)),
      tick_(socket_.get_executor()),
      read_pace_(socket_.get_executor()),
      write_pace_(socket_.get_executor()),
      options_(options),
      label_(std::move(label)),
      pool_(pool ? std::move(pool) : std::make_shared<BufferPool>()),
      heartbeat_interval_(std::clamp(std::min(options.heartbeat_interval, options.peer_timeout / 4),
                                     kMinHeartbeat,
                                     std::max(kMinHeartbeat, options.heartbeat_interval))) {
  boost::system::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
}

Connection::~Connection() {
  boost::system::error_code ignored;
  socket_.close(ignored);
}

std::string Connection::remote_endpoint() const {
  boost::system::error_code ec;
  const tcp::endpoint endpoint = socket_.remote_endpoint(ec);
  if (ec) return "?";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

void Connection::start(MessageHandler on_message, CloseHandler on_close) {
  on_message_ = std::move(on_message);
  on_close_ = std::move(on_close);
  started_ = true;
  created_ = last_received_ = last_sent_ = Clock::now();
  staging_.resize(kStagingBytes);
  schedule_tick();
  fill_staging();
}

void Connection::set_message_handler(MessageHandler on_message) {
  if (delivering_)
    next_handler_ = std::move(on_message);
  else
    on_message_ = std::move(on_message);
}

void Connection::request_heartbeat_interval(std::chrono::milliseconds interval) {
  const auto before = heartbeat_interval_;
  heartbeat_interval_ = std::clamp(interval, kMinHeartbeat, heartbeat_interval_);
  // The tick armed at start() waits half the old interval: re-arm it at the new one, or the
  // first heartbeat comes too late for a peer timeout shorter than that wait.
  if (started_ && !closed_ && heartbeat_interval_ < before) schedule_tick();
}

void Connection::set_authenticated() {
  authenticated_ = true;
  last_received_ = Clock::now();
}

// --- reading ---
void Connection::read_failed(const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted) return;
  std::string where;
  if (pending_ || read_state_ == ReadState::kMeta)
    where = " in the middle of a " + std::string(message_type_name(header_.type)) + " frame";
  else if (staged_end_ > staged_begin_)
    where = " in the middle of a frame header";
  if (ec == asio::error::eof)
    close("connection closed by the peer" + where);
  else
    close(ec.message() + where);
}

void Connection::fill_staging() {
  // Keep the unparsed bytes at the front so the rest of the buffer can be filled.
  if (staged_begin_ > 0) {
    std::copy(staging_.begin() + static_cast<std::ptrdiff_t>(staged_begin_),
              staging_.begin() + static_cast<std::ptrdiff_t>(staged_end_), staging_.begin());
    staged_end_ -= staged_begin_;
    staged_begin_ = 0;
  }
  auto self = shared_from_this();
  std::size_t room = staging_.size() - staged_end_;
  if (paced()) room = std::min(room, kPacedSlice);
  read_asked_ = room;
  note_read_issued();
  socket_.async_read_some(asio::buffer(staging_.data() + staged_end_, room),
                          [self](const boost::system::error_code& ec, std::size_t bytes) {
                            self->on_filled(ec, bytes);
                          });
}

void Connection::on_filled(const boost::system::error_code& ec, std::size_t bytes) {
  if (closed_ || reading_stopped_) return;
  if (ec) return read_failed(ec);
  last_received_ = Clock::now();
  staged_end_ += bytes;
  after_ingress(bytes, read_backlogged_, [this] { parse_staged(); });
}

void Connection::note_read_issued() {
  read_backlogged_ = false;
  if (!paced()) return;
  boost::system::error_code ec;
  read_backlogged_ = socket_.available(ec) > 0 && !ec;
}

bool Connection::paced() const { return options_.port && options_.port->spec().paced(); }

// Runs `next` once `bytes` just read have crossed the emulated port (at once when unshaped).
template <class Next>
void Connection::after_ingress(std::size_t bytes, bool backlogged, Next next) {
  if (!options_.port) return next();
  const auto at = options_.port->received_at(bytes, backlogged);
  if (at - Clock::now() < kPaceSlack) return next();
  read_pace_.expires_at(at);
  auto self = shared_from_this();
  read_pace_.async_wait([self, next](const boost::system::error_code& ec) {
    if (ec || self->closed_ || self->reading_stopped_) return;
    next();
  });
}

// Parses every complete frame in the staging buffer, then asks for more bytes.
void Connection::parse_staged() {
  while (!closed_ && !reading_stopped_) {
    const std::size_t staged = staged_end_ - staged_begin_;
    const auto view = std::span<const std::uint8_t>(staging_).subspan(staged_begin_, staged);
    if (read_state_ == ReadState::kHeader) {
      if (staged < kHeaderBytes) return fill_staging();
      try {
        header_ = parse_header(view.first(kHeaderBytes), options_.limits, authenticated_);
      } catch (const ProtocolError& e) {
        return fail(e.code(), e.what());
      }
      staged_begin_ += kHeaderBytes;
      read_state_ = ReadState::kMeta;
      // The size was checked against the metadata limit just above.
      if (header_.meta_bytes > staging_.size()) staging_.resize(header_.meta_bytes);
      continue;
    }
    if (staged < header_.meta_bytes) return fill_staging();
    try {
      pending_ = decode_meta(header_, view.first(header_.meta_bytes), options_.limits);
    } catch (const ProtocolError& e) {
      return fail(e.code(), e.what());
    }
    staged_begin_ += header_.meta_bytes;
    read_state_ = ReadState::kHeader;
    if (!take_payload()) return read_payload_rest();
    deliver();
  }
}

// Moves the staged part of the payload into its buffer; true when the payload is complete.
bool Connection::take_payload() {
  std::vector<std::int8_t>* target = payload_target(*pending_);
  if (target == nullptr || header_.payload_bytes == 0) return true;
  // Sizes were checked by parse_header and decode_meta; only now is the buffer taken.
  *target = pool_->take(static_cast<std::size_t>(header_.payload_bytes));
  const std::size_t staged = std::min(staged_end_ - staged_begin_, target->size());
  std::memcpy(target->data(), staging_.data() + staged_begin_, staged);
  staged_begin_ += staged;
  payload_done_ = staged;
  return payload_done_ == target->size();
}

void Connection::read_payload_rest() {
  std::vector<std::int8_t>& target = *payload_target(*pending_);
  auto self = shared_from_this();
  if (paced()) {
    // Whatever has arrived, up to a slice: a full slice means the sender is ahead.
    read_asked_ = std::min(kPacedSlice, target.size() - payload_done_);
    note_read_issued();
    socket_.async_read_some(asio::buffer(target.data() + payload_done_, read_asked_),
                            [self](const boost::system::error_code& ec, std::size_t bytes) {
                              self->on_payload(ec, bytes);
                            });
    return;
  }
  const std::size_t size = std::min(kPayloadSlice, target.size() - payload_done_);
  read_asked_ = size;
  asio::async_read(socket_, asio::buffer(target.data() + payload_done_, size), whole_buffer,
                   [self](const boost::system::error_code& ec, std::size_t bytes) {
                     self->on_payload(ec, bytes);
                   });
}

void Connection::on_payload(const boost::system::error_code& ec, std::size_t bytes) {
  if (closed_ || reading_stopped_) return;
  if (ec) return read_failed(ec);
  last_received_ = Clock::now();
  payload_done_ += bytes;
  after_ingress(bytes, read_backlogged_, [this] {
    if (payload_done_ < payload_target(*pending_)->size()) return read_payload_rest();
    deliver();
    parse_staged();
  });
}

void Connection::deliver() {
  Message message = std::move(*pending_);
  pending_.reset();
  if (!on_message_) return;
  delivering_ = true;
  try {
    on_message_(std::move(message));
  } catch (const ProtocolError& e) {
    fail(e.code(), e.what());
  } catch (const std::exception& e) {
    fail(ErrorCode::kInternal, e.what());
  }
  delivering_ = false;
  if (next_handler_) {
    on_message_ = std::move(*next_handler_);
    next_handler_.reset();
  }
}

// --- writing ---
void Connection::send(const Message& message) {
  Outgoing outgoing;
  outgoing.head = encode_head(message);
  if (const auto* t = std::get_if<TensorMsg>(&message)) {
    auto bytes = std::make_shared<std::vector<std::int8_t>>(t->tensor.data);
    outgoing.payload = asio::buffer(*bytes);
    outgoing.owner = bytes;
  } else if (const auto* c = std::get_if<UploadChunk>(&message)) {
    auto bytes = std::make_shared<std::vector<std::int8_t>>(c->bytes);
    outgoing.payload = asio::buffer(*bytes);
    outgoing.owner = bytes;
  }
  enqueue(std::move(outgoing));
}

std::size_t Connection::send_tensor(std::uint64_t job, std::uint64_t frame, std::uint32_t slot,
                                    std::uint32_t index, std::shared_ptr<const QTensor> tensor) {
  Outgoing outgoing;
  outgoing.head = encode_tensor_head(job, frame, slot, index, *tensor);
  outgoing.payload = asio::buffer(tensor->data);
  outgoing.owner = std::move(tensor);
  const std::size_t bytes = outgoing.head.size() + outgoing.payload.size();
  tensor_bytes_sent_ += bytes;
  enqueue(std::move(outgoing));
  return bytes;
}

void Connection::send_raw(std::vector<std::uint8_t> head, std::shared_ptr<const void> owner,
                          asio::const_buffer payload) {
  enqueue(Outgoing{std::move(head), std::move(owner), payload});
}

void Connection::enqueue(Outgoing outgoing) {
  if (closed_ || close_after_flush_) return;
  queued_bytes_ += outgoing.head.size() + outgoing.payload.size();
  queue_.push_back(std::move(outgoing));
  if (!write_active_) {
    write_follows_ = false;
    write_next();
  }
}

void Connection::write_next() {
  writing_.clear();
  gather_.clear();
  while (!queue_.empty() && writing_.size() < kMaxGather) {
    writing_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  gather_bytes_ = 0;
  gather_done_ = 0;
  for (const Outgoing& outgoing : writing_) {
    gather_.push_back(asio::buffer(outgoing.head));
    if (outgoing.payload.size() > 0) gather_.push_back(outgoing.payload);
    gather_bytes_ += outgoing.head.size() + outgoing.payload.size();
  }
  write_active_ = true;
  auto self = shared_from_this();
  if (!paced()) {
    asio::async_write(
        socket_, gather_, whole_buffer,
        [self](const boost::system::error_code& ec, std::size_t) { self->on_written(ec); });
    return;
  }
  write_step();
}

// A paced write: the next slice of the gathered messages, once the port's egress bucket
// gives it its turn.
void Connection::write_step() {
  if (closed_) return on_written(asio::error::operation_aborted);
  if (gather_done_ >= gather_bytes_) return on_written({});
  const std::size_t n = std::min(kPacedSlice, gather_bytes_ - gather_done_);
  slice_.clear();
  std::size_t skip = gather_done_, want = n;
  for (const asio::const_buffer& b : gather_) {
    if (want == 0) break;
    if (skip >= b.size()) {
      skip -= b.size();
      continue;
    }
    const std::size_t take = std::min(want, b.size() - skip);
    slice_.push_back(asio::buffer(static_cast<const std::uint8_t*>(b.data()) + skip, take));
    skip = 0;
    want -= take;
  }
  auto self = shared_from_this();
  auto write = [self, n] {
    asio::async_write(self->socket_, self->slice_, whole_buffer,
                      [self, n](const boost::system::error_code& ec, std::size_t) {
                        if (ec) return self->on_written(ec);
                        self->gather_done_ += n;
                        self->last_sent_ = Clock::now();
                        self->write_step();
                      });
  };
  const auto at = options_.port->send_at(n, gather_done_ > 0 || write_follows_);
  if (at - Clock::now() < kPaceSlack) return write();
  write_pace_.expires_at(at);
  write_pace_.async_wait([self, write](const boost::system::error_code& ec) {
    if (ec || self->closed_) return self->on_written(asio::error::operation_aborted);
    write();
  });
}

void Connection::on_written(const boost::system::error_code& ec) {
  write_active_ = false;
  for (const Outgoing& outgoing : writing_)
    queued_bytes_ -= outgoing.head.size() + outgoing.payload.size();
  writing_.clear();
  if (closed_) return;
  if (ec) return close("write failed: " + ec.message());
  last_sent_ = Clock::now();
  if (!queue_.empty()) {
    write_follows_ = true;
    return write_next();
  }
  if (close_after_flush_) close(*close_after_flush_);
}

// --- lifetime ---
void Connection::fail(ErrorCode code, const std::string& message) {
  if (closed_ || close_after_flush_) return;
  reading_stopped_ = true;
  sent_error_ = code;
  send(ErrorMsg{code, kNoFrame, message});
  close_after_flush("sent ERROR " + std::string(error_code_name(code)) + ": " + message);
}

void Connection::close_after_flush(const std::string& reason) {
  if (closed_ || close_after_flush_) return;
  close_after_flush_ = reason;
  closing_since_ = Clock::now();
  if (!write_active_ && queue_.empty()) close(reason);
}

void Connection::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  tick_.cancel();
  read_pace_.cancel();
  write_pace_.cancel();
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  queue_.clear();
  auto self = shared_from_this();
  // Posted so the owner never sees its close handler run inside one of its own calls.
  asio::post(socket_.get_executor(), [self, reason] {
    if (self->on_close_) self->on_close_(reason);
    // Handlers often capture their owner; dropping them breaks the cycle.
    self->on_close_ = nullptr;
    self->on_message_ = nullptr;
    self->next_handler_.reset();
  });
}

void Connection::schedule_tick() {
  const auto period = std::max(kMinHeartbeat / 2, heartbeat_interval_ / 2);
  tick_.expires_after(period);
  auto self = shared_from_this();
  tick_.async_wait([self](const boost::system::error_code& ec) {
    if (!ec) self->on_tick();
  });
}

void Connection::on_tick() {
  if (closed_) return;
  const auto now = Clock::now();
  if (closing_since_ && now - *closing_since_ > kCloseGrace)
    return close(close_after_flush_.value_or("closed"));
  if (!authenticated_ && now - created_ > options_.handshake_timeout)
    return fail(
        ErrorCode::kTimeout,
        "no handshake within " + std::to_string(options_.handshake_timeout.count()) + " ms");
  if (authenticated_ && now - last_received_ > options_.peer_timeout)
    return close("no message from the peer for " + std::to_string(options_.peer_timeout.count()) +
                 " ms");
  if (authenticated_ && !write_active_ && !close_after_flush_ &&
      now - last_sent_ >= heartbeat_interval_)
    send(Heartbeat{++heartbeat_sequence_});
  schedule_tick();
}

// --- addresses ---
std::pair<std::string, std::uint16_t> split_host_port(const std::string& address,
                                                      const std::string& what) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
    throw Error(what + ": address '" + address + "' is not HOST:PORT");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  const char* begin = address.data() + colon + 1;
  const char* end = address.data() + address.size();
  const auto [ptr, ec] = std::from_chars(begin, end, port);
  if (ec != std::errc() || ptr != end || port > 65535)
    throw Error(what + ": address '" + address + "' has no valid port");
  return {host, static_cast<std::uint16_t>(port)};
}

void async_connect_to(asio::io_context& io, const std::string& address,
                      std::chrono::milliseconds timeout,
                      std::function<void(const std::string& error, tcp::socket socket)> done) {
  struct Attempt {
    explicit Attempt(asio::io_context& context)
        : resolver(context), socket(context), timer(context) {}
    tcp::resolver resolver;
    tcp::socket socket;
    asio::steady_timer timer;
    bool finished = false;
    std::function<void(const std::string&, tcp::socket)> done;
    void finish(const std::string& error) {
      if (finished) return;
      finished = true;
      timer.cancel();
      resolver.cancel();
      if (!error.empty()) {
        boost::system::error_code ignored;
        socket.close(ignored);
      }
      done(error, std::move(socket));
    }
  };
  auto attempt = std::make_shared<Attempt>(io);
  attempt->done = std::move(done);
  std::pair<std::string, std::uint16_t> host_port;
  try {
    host_port = split_host_port(address, "connect");
  } catch (const Error& e) {
    asio::post(io, [attempt, message = std::string(e.what())] { attempt->finish(message); });
    return;
  }
  attempt->timer.expires_after(timeout);
  attempt->timer.async_wait([attempt, address, timeout](const boost::system::error_code& ec) {
    if (ec) return;
    attempt->finish("no connection to " + address + " within " + std::to_string(timeout.count()) +
                    " ms");
  });
  attempt->resolver.async_resolve(
      host_port.first, std::to_string(host_port.second),
      [attempt, address](const boost::system::error_code& ec,
                         const tcp::resolver::results_type& results) {
        if (attempt->finished) return;
        if (ec) return attempt->finish("cannot resolve " + address + ": " + ec.message());
        asio::async_connect(
            attempt->socket, results,
            [attempt, address](const boost::system::error_code& e, const tcp::endpoint&) {
              if (attempt->finished) return;
              if (e) return attempt->finish("cannot connect to " + address + ": " + e.message());
              attempt->finish("");
            });
      });
}

}  // namespace dpushard::net
