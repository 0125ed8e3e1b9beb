#pragma once
// One authenticated-or-handshaking TCP connection speaking the dpushard protocol: reads
// frames (sizes checked before allocation, payloads received straight into their final
// buffer), writes queued frames with scatter-gather (tensor bytes are never copied),
// sends heartbeats and notices a silent peer. All methods run on the connection's
// io_context thread.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "dpushard/net/asio.hpp"

#include "dpushard/net/buffer_pool.hpp"
#include "dpushard/net/link_shaper.hpp"
#include "dpushard/net/protocol.hpp"

namespace dpushard::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// The shortest heartbeat interval a connection uses, whatever it is asked for.
inline constexpr std::chrono::milliseconds kMinHeartbeat{10};

struct ConnectionOptions {
  Limits limits;
  std::chrono::milliseconds heartbeat_interval{500};
  std::chrono::milliseconds peer_timeout{5000};  // silence after which the peer counts as gone
  std::chrono::milliseconds handshake_timeout{5000};
  // The process's emulated network port, shared by all its connections; null or
  // unconfigured: reads and writes go at loopback speed.
  std::shared_ptr<PortShaper> port;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using MessageHandler = std::function<void(Message&&)>;
  using CloseHandler = std::function<void(const std::string& reason)>;

  static std::shared_ptr<Connection> create(tcp::socket socket, const ConnectionOptions& options,
                                            std::string label, std::shared_ptr<BufferPool> pool);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts reading. `on_close` runs once, posted, when the connection ends for any reason.
  void start(MessageHandler on_message, CloseHandler on_close);
  // Replaces the handler; safe to call from inside the current handler (takes effect for
  // the next message).
  void set_message_handler(MessageHandler on_message);
  void set_close_handler(CloseHandler on_close) { on_close_ = std::move(on_close); }
  // Switches from handshake limits to full limits and starts heartbeats.
  void set_authenticated();
  bool authenticated() const { return authenticated_; }
  // The longest this side stays silent: at most a quarter of its own peer timeout, so the
  // peer's check of the same timeout is served (never below kMinHeartbeat).
  std::chrono::milliseconds heartbeat_interval() const { return heartbeat_interval_; }
  // Heartbeats at most every `interval` from now on (what the peer asked for in HELLO).
  void request_heartbeat_interval(std::chrono::milliseconds interval);

  // Queues a message; a payload (if any) is copied. For control messages and tests.
  void send(const Message& message);
  // Queues a TENSOR frame whose values are written from `tensor` itself; returns the
  // frame's size in bytes.
  std::size_t send_tensor(std::uint64_t job, std::uint64_t frame, std::uint32_t slot,
                          std::uint32_t index, std::shared_ptr<const QTensor> tensor);
  // Queues a ready-made head and a payload kept alive by `owner`.
  void send_raw(std::vector<std::uint8_t> head, std::shared_ptr<const void> owner,
                asio::const_buffer payload);

  // Sends ERROR(code, message) and closes once it is written (or after a short grace).
  void fail(ErrorCode code, const std::string& message);
  // Closes when everything queued so far is written.
  void close_after_flush(const std::string& reason);
  void close(const std::string& reason);
  bool is_open() const { return !closed_; }
  // The code of the ERROR this side sent before closing (a dropped peer), if any.
  std::optional<ErrorCode> sent_error() const { return sent_error_; }

  const std::string& label() const { return label_; }
  void set_label(std::string label) { label_ = std::move(label); }
  std::string remote_endpoint() const;
  std::uint64_t tensor_bytes_sent() const { return tensor_bytes_sent_; }
  std::size_t queued_bytes() const { return queued_bytes_; }

 private:
  struct Outgoing {
    std::vector<std::uint8_t> head;
    std::shared_ptr<const void> owner;
    asio::const_buffer payload;
  };

  Connection(tcp::socket socket, const ConnectionOptions& options, std::string label,
             std::shared_ptr<BufferPool> pool);

  // Reading: frames are parsed from a staging buffer filled by read_some, so a burst of
  // small frames costs one system call; a large payload's remainder is read straight
  // into its own buffer.
  enum class ReadState { kHeader, kMeta };
  void parse_staged();
  void fill_staging();
  void on_filled(const boost::system::error_code& ec, std::size_t bytes);
  bool take_payload();
  void read_payload_rest();
  void on_payload(const boost::system::error_code& ec, std::size_t bytes);
  void deliver();
  void read_failed(const boost::system::error_code& ec);
  void enqueue(Outgoing outgoing);
  void write_next();
  void write_step();
  void on_written(const boost::system::error_code& ec);
  // The emulated link: true when the port paces now. Reads and writes then go in slices,
  // each waiting for its turn in the port's bucket.
  bool paced() const;
  // `backlogged`: bytes were already waiting when the read began: the pacing, not the
  // sender, held them back.
  template <class Next>
  void after_ingress(std::size_t bytes, bool backlogged, Next next);
  void schedule_tick();
  void on_tick();

  tcp::socket socket_;
  asio::steady_timer tick_;
  asio::steady_timer read_pace_;
  asio::steady_timer write_pace_;
  ConnectionOptions options_;
  std::string label_;
  std::shared_ptr<BufferPool> pool_;
  MessageHandler on_message_;
  std::optional<MessageHandler> next_handler_;
  CloseHandler on_close_;
  bool delivering_ = false;

  bool started_ = false;
  bool authenticated_ = false;
  bool closed_ = false;
  bool reading_stopped_ = false;  // after fail(): the rest of the stream is not read
  std::optional<std::string> close_after_flush_;
  std::optional<ErrorCode> sent_error_;
  Clock::time_point created_ = Clock::now();
  Clock::time_point last_received_ = Clock::now();
  Clock::time_point last_sent_ = Clock::now();
  std::optional<Clock::time_point> closing_since_;
  std::uint64_t heartbeat_sequence_ = 0;
  std::chrono::milliseconds heartbeat_interval_;

  std::vector<std::uint8_t> staging_;
  std::size_t staged_begin_ = 0;
  std::size_t staged_end_ = 0;
  ReadState read_state_ = ReadState::kHeader;
  FrameHeader header_;
  std::optional<Message> pending_;
  std::size_t payload_done_ = 0;

  std::deque<Outgoing> queue_;
  std::vector<Outgoing> writing_;
  std::vector<asio::const_buffer> gather_;
  std::size_t gather_bytes_ = 0;
  std::size_t gather_done_ = 0;   // bytes of gather_ written so far (paced writes)
  bool write_follows_ = false;    // this batch was queued while the previous one was written
  std::size_t read_asked_ = 0;    // bytes the pending read may return
  bool read_backlogged_ = false;  // bytes were already waiting when the pending read began
  void note_read_issued();
  std::vector<asio::const_buffer> slice_;
  bool write_active_ = false;
  std::size_t queued_bytes_ = 0;
  std::uint64_t tensor_bytes_sent_ = 0;
};

// "host:port" -> endpoint parts; throws dpushard::Error naming `what` on bad input.
std::pair<std::string, std::uint16_t> split_host_port(const std::string& address,
                                                      const std::string& what);

// Connects to `address` ("host:port") within `timeout`; `done(error, socket)` runs on
// the io thread with an empty error on success.
void async_connect_to(asio::io_context& io, const std::string& address,
                      std::chrono::milliseconds timeout,
                      std::function<void(const std::string& error, tcp::socket socket)> done);

}  // namespace dpushard::net
