// The emulated link (core/include/dpushard/net/link_shaper.hpp): each node's port paces what it
// sends and receives. Every node here has its own io thread and port, as separate worker processes
// do; the tensors really cross loopback TCP through the protocol's connections. The times checked
// are the emulated wire's (payload bytes framed as Gigabit Ethernet frames them, 1538 wire bytes
// per 1460, / rate), which a loaded machine can only stretch (a starved io thread comes back late):
// each case is tried up to three times and its best attempt must be within 10 % (5 % for the
// framing itself).

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "dpushard/net/client.hpp"
#include "dpushard/perf/ethernet_link.hpp"

namespace dpushard::net {
namespace {

using Seconds = std::chrono::duration<double>;

// One node: an io thread and its port.
struct Node {
  explicit Node(double gbps) {
    port->configure(LinkSpec{static_cast<std::uint64_t>(gbps * 1e9), {}});
  }
  ~Node() {
    asio::post(io, [this] {
      for (auto& c : connections) c->close("test over");
    });
    work.reset();
    if (thread.joinable()) thread.join();
  }
  void run() {
    thread = std::thread([this] { io.run(); });
  }
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{io.get_executor()};
  std::shared_ptr<PortShaper> port = std::make_shared<PortShaper>();
  std::vector<std::shared_ptr<Connection>> connections;
  std::thread thread;
};

// Arrival times of tensors, by the frame number the sender gave them.
class Arrivals {
 public:
  void record(std::uint64_t frame) {
    const std::lock_guard lock(mutex_);
    at_[frame] = Clock::now();
    changed_.notify_all();
  }
  Clock::time_point wait(std::uint64_t frame) {
    std::unique_lock lock(mutex_);
    const bool arrived =
        changed_.wait_for(lock, std::chrono::seconds(30), [&] { return at_.count(frame) != 0; });
    if (!arrived) throw std::runtime_error("frame " + std::to_string(frame) + " never arrived");
    return at_[frame];
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint64_t, Clock::time_point> at_;
};

ConnectionOptions options_for(const Node& node) {
  ConnectionOptions o;
  o.heartbeat_interval = std::chrono::milliseconds(10000);
  o.peer_timeout = std::chrono::milliseconds(60000);
  o.port = node.port;
  return o;
}

std::shared_ptr<Connection> open(Node& node, tcp::socket socket, Arrivals& arrivals) {
  auto c = Connection::create(std::move(socket), options_for(node), "test", nullptr);
  c->set_authenticated();
  c->start(
      [&arrivals](Message&& m) {
        if (const auto* t = std::get_if<TensorMsg>(&m)) arrivals.record(t->frame);
      },
      [](const std::string&) {});
  node.connections.push_back(c);
  return c;
}

// A connection from `from` to `to` (before their io threads run); returns both ends.
std::pair<std::shared_ptr<Connection>, std::shared_ptr<Connection>> connect(Node& from,
                                                                            Arrivals& from_arrivals,
                                                                            Node& to,
                                                                            Arrivals& to_arrivals) {
  tcp::acceptor acceptor(to.io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket client(from.io), server(to.io);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(server);
  auto a = open(from, std::move(client), from_arrivals);
  auto b = open(to, std::move(server), to_arrivals);
  return {a, b};
}

// Two nodes at `gbps` each, connected, their io threads running.
struct LinkedPair {
  explicit LinkedPair(double gbps) : a(gbps), b(gbps) {
    std::tie(ab, ba) = connect(a, at_a, b, at_b);
    a.run();
    b.run();
  }
  Arrivals at_a, at_b;  // declared first: they outlive the io threads that record into them
  Node a, b;
  std::shared_ptr<Connection> ab, ba;
};

std::shared_ptr<const QTensor> tensor_of(std::size_t bytes) {
  QTensor t;
  t.name = "t";
  t.shape = {static_cast<std::int64_t>(bytes)};
  t.data.assign(bytes, 1);
  return std::make_shared<const QTensor>(std::move(t));
}

void send(Node& node, const std::shared_ptr<Connection>& c, std::uint64_t frame,
          const std::shared_ptr<const QTensor>& tensor) {
  asio::post(node.io, [c, frame, tensor] { c->send_tensor(1, frame, 0, 0, tensor); });
}

constexpr std::size_t kEightMB = 8'000'000;
// A loaded machine only makes a transfer late (a paced sender that wakes late), never early:
// the best of a few runs is the pacer's own time. Three were not enough at load average 4-5
// on two cores (all three 8 % late); a run at 1 Gbit/s costs 70 ms.
constexpr int kAttempts = 6;
// Wire bytes per payload byte: Ethernet, IP and TCP framing per 1460-byte segment.
constexpr double kFraming = 1538.0 / 1460.0;
// 8 MB at 0.1 Gbit/s: 0.64 s of payload, 0.674 s on the wire.
constexpr double kEightMBAtATenth = 0.64 * kFraming;

// The best of up to kAttempts runs of `attempt` (each returns its times), by the worst
// time's distance from `expected`; stops at the first within `tolerance`.
std::vector<double> best_of(double expected, const std::function<std::vector<double>()>& attempt,
                            double tolerance = 0.1) {
  std::vector<double> best;
  double best_error = 1e9;
  for (int i = 0; i < kAttempts; ++i) {
    const std::vector<double> times = attempt();
    double error = 0;
    for (double t : times) error = std::max(error, std::fabs(t - expected) / expected);
    if (error < best_error) {
      best_error = error;
      best = times;
    }
    if (best_error <= tolerance) break;
  }
  return best;
}

TEST(LinkPacing, EightMegabytesAtOneGigabitCarryEthernetFraming) {
  // What Gigabit Ethernet puts on the wire: 8e6 x 8 x 1538/1460 / 1e9 = 67.4 ms, not the
  // 64 ms of the payload alone; the constants are the planner's (ethernet_link.hpp).
  static_assert(ethernet::kPayloadPerSegment == 1460 && ethernet::kWirePerSegment == 1538);
  const double expected = 8e6 * 8 * 1538 / 1460 / 1e9;
  EXPECT_NEAR(ethernet::wire_seconds(8e6, 1e9), expected, 1e-12);
  const auto tensor = tensor_of(kEightMB);
  const double seconds = best_of(
      expected,
      [&] {
        LinkedPair n(1.0);
        const auto start = Clock::now();
        send(n.a, n.ab, 7, tensor);
        return std::vector<double>{Seconds(n.at_b.wait(7) - start).count()};
      },
      0.05)[0];
  std::printf("8 MB at 1 Gbit/s: %.4f s (expected %.4f with framing, 0.0640 without)\n", seconds,
              expected);
  EXPECT_NEAR(seconds, expected, 0.05 * expected);
}

TEST(LinkPacing, EightMegabytesAtATenthOfAGigabitTakeSixtySevenHundredths) {
  const auto tensor = tensor_of(kEightMB);
  const double seconds = best_of(kEightMBAtATenth, [&] {
    LinkedPair n(0.1);
    const auto start = Clock::now();
    send(n.a, n.ab, 7, tensor);
    return std::vector<double>{Seconds(n.at_b.wait(7) - start).count()};
  })[0];
  std::printf("8 MB at 0.1 Gbit/s: %.3f s (expected %.3f)\n", seconds, kEightMBAtATenth);
  EXPECT_NEAR(seconds, kEightMBAtATenth, 0.1 * kEightMBAtATenth);
}

TEST(LinkPacing, BothDirectionsAtOnceEachTakeSixtySevenHundredths) {
  const auto tensor = tensor_of(kEightMB);
  const auto times = best_of(kEightMBAtATenth, [&] {
    LinkedPair n(0.1);
    const auto start = Clock::now();
    send(n.a, n.ab, 1, tensor);
    send(n.b, n.ba, 2, tensor);
    const double there = Seconds(n.at_b.wait(1) - start).count();
    return std::vector<double>{there, Seconds(n.at_a.wait(2) - start).count()};
  });
  const double a_to_b = times[0], b_to_a = times[1];
  std::printf("full duplex, 8 MB each way at 0.1 Gbit/s: a->b %.3f s, b->a %.3f s\n", a_to_b,
              b_to_a);
  EXPECT_NEAR(a_to_b, kEightMBAtATenth, 0.1 * kEightMBAtATenth);
  EXPECT_NEAR(b_to_a, kEightMBAtATenth, 0.1 * kEightMBAtATenth);
}

TEST(LinkPacing, TwoSendersShareOneReceivingPort) {
  // 32 MB from each of a and c into b's 1 Gbit/s port: alone 0.256 s each; sharing b's
  // ingress, each gets half the port, so both finish at about 0.512 s of payload, 0.539 s
  // with the framing (0.47 Gbit/s of payload each).
  constexpr std::size_t kBytes = 32'000'000;
  const auto tensor = tensor_of(kBytes);
  const auto times = best_of(0.512 * kFraming, [&] {
    Node a(1.0), b(1.0), c(1.0);
    Arrivals at_a, at_b, at_c;
    auto [ab, ba] = connect(a, at_a, b, at_b);
    auto [cb, bc] = connect(c, at_c, b, at_b);
    a.run();
    b.run();
    c.run();
    const auto start = Clock::now();
    send(a, ab, 1, tensor);
    send(c, cb, 2, tensor);
    const double first = Seconds(at_b.wait(1) - start).count();
    return std::vector<double>{first, Seconds(at_b.wait(2) - start).count()};
  });
  const double from_a = times[0], from_c = times[1];
  std::printf(
      "two senders into one 1 Gbit/s port, 32 MB each: %.3f s and %.3f s (%.2f and "
      "%.2f Gbit/s of payload; expected 0.539 s, 0.47 Gbit/s each)\n",
      from_a, from_c, kBytes * 8 / from_a / 1e9, kBytes * 8 / from_c / 1e9);
  // Half each: the two rates within 10 % of each other, and together never more than the
  // port. From below only loosely: the receiving io thread handles every slice of both (the
  // most timer work of these cases), and a loaded two-core machine measured 0.44 Gbit/s
  // each, steadily, with a build beside it, so what a busy machine makes
  // slower is bounded at 0.3 (a port serving one sender at a time would fail the ratio).
  const double rate_a = kBytes * 8 / from_a / 1e9, rate_c = kBytes * 8 / from_c / 1e9;
  EXPECT_LE(rate_a, 0.55);
  EXPECT_LE(rate_c, 0.55);
  EXPECT_GE(rate_a, 0.3);
  EXPECT_GE(rate_c, 0.3);
  EXPECT_NEAR(rate_a / rate_c, 1.0, 0.1);
  EXPECT_LE(rate_a + rate_c, 1.05 / kFraming);
}

TEST(LinkPacing, TwoConnectionsShareOneSendingPort) {
  // a sends to b and c at once: its egress is the shared resource.
  constexpr std::size_t kBytes = 32'000'000;
  const auto tensor = tensor_of(kBytes);
  const auto times = best_of(0.512 * kFraming, [&] {
    Node a(1.0), b(1.0), c(1.0);
    Arrivals at_a, at_b, at_c;
    auto [ab, ba] = connect(a, at_a, b, at_b);
    auto [ac, ca] = connect(a, at_a, c, at_c);
    a.run();
    b.run();
    c.run();
    const auto start = Clock::now();
    send(a, ab, 1, tensor);
    send(a, ac, 2, tensor);
    const double first = Seconds(at_b.wait(1) - start).count();
    return std::vector<double>{first, Seconds(at_c.wait(2) - start).count()};
  });
  const double to_b = times[0], to_c = times[1];
  std::printf("one 1 Gbit/s port sending 32 MB to each of two nodes: %.3f s and %.3f s\n", to_b,
              to_c);
  // Both share the port: the later one ends when 64 MB have crossed, and neither starves.
  EXPECT_NEAR(std::max(to_b, to_c), 0.512 * kFraming, 0.0512 * kFraming);
  EXPECT_GT(std::min(to_b, to_c), 0.512 * kFraming * 0.6);
}

TEST(LinkPacing, LatencyIsAddedOnceAndUnshapedPortsDoNotWait) {
  Node a(0.1), b(0.1);
  a.port->configure(LinkSpec{100'000'000, std::chrono::microseconds(50'000)});
  Arrivals at_a, at_b;
  auto [ab, ba] = connect(a, at_a, b, at_b);
  a.run();
  b.run();
  auto start = Clock::now();
  send(a, ab, 1, tensor_of(1'000'000));  // 84 ms on the wire (80 of payload) + 50 ms latency
  const double paced = Seconds(at_b.wait(1) - start).count();
  const double expected = 0.080 * kFraming + 0.050;
  std::printf("1 MB at 0.1 Gbit/s with 50 ms latency: %.3f s (expected %.3f)\n", paced, expected);
  // A loaded machine only adds to it; the latency added twice would be 0.184 s.
  EXPECT_GE(paced, expected - 0.013);
  EXPECT_LT(paced, expected + 0.025);

  a.port->configure(LinkSpec{});
  b.port->configure(LinkSpec{});
  start = Clock::now();
  send(a, ab, 2, tensor_of(kEightMB));
  const double unshaped = Seconds(at_b.wait(2) - start).count();
  std::printf("8 MB unshaped: %.3f s\n", unshaped);
  EXPECT_LT(unshaped, 0.3);  // loopback: tens of milliseconds
}

TEST(LinkPacing, BucketKeepsItsScheduleOnlyForBackloggedCallers) {
  RateBucket bucket;
  const std::uint64_t rate = 8'000'000;  // 1 MB/s: 1000 bytes per ms
  const auto first = bucket.reserve(1000, rate, {});
  EXPECT_NEAR(Seconds(first.end - first.start).count(), 0.001 * kFraming, 1e-6);  // framed
  // Right after: queued behind the first.
  const auto second = bucket.reserve(1000, rate, {});
  EXPECT_EQ(second.start, first.end);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  // Idle for 30 ms: no saved-up burst, the port starts now.
  const auto idle = bucket.reserve(1000, rate, {});
  EXPECT_GE(idle.start, second.end + std::chrono::milliseconds(25));
  // A backlogged caller that comes back 50 ms late keeps the schedule.
  std::this_thread::sleep_until(idle.end + std::chrono::milliseconds(50));
  const auto late = bucket.reserve(1000, rate, RateBucket::kCatchUp);
  EXPECT_EQ(late.start, idle.end);
}

}  // namespace
}  // namespace dpushard::net
