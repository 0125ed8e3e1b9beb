#pragma once
// The emulated network port of one node (docs/cluster.md, "The emulated link"): a token
// bucket per direction paces the bytes a process sends and receives to the cluster's link
// rate, without root. Every connection of a process shares its port: all outgoing bytes
// take turns in the egress bucket, all incoming bytes in the ingress bucket, and the two
// directions are independent (full duplex). An optional one-way latency delays every
// send. What crosses is charged as Gigabit Ethernet puts it on the wire: every payload byte
// costs 1538/1460 wire bytes (Ethernet, IP and TCP framing per segment), the constants the
// planner prices transfers with (dpushard/perf/ethernet_link.hpp). Thread-safe; an unconfigured
// port does not pace.

#include <chrono>
#include <cstdint>
#include <mutex>

namespace dpushard::net {

struct LinkSpec {
  std::uint64_t bits_per_s = 0;          // the line rate; 0: unshaped
  std::chrono::microseconds latency{0};  // one way (cluster.yaml's default: the planner's)
  bool paced() const { return bits_per_s > 0; }
};

// A strict bucket: bytes cross one after the other at the rate, and an idle port saves up
// no burst a real wire could not send. Only a backlogged caller (one that had its next
// bytes ready the moment its previous turn ended) keeps the bucket's schedule when it comes
// back late, up to kCatchUp (plus the latency for a sender, whose slices are written one
// latency after their slot): a timer that fires late on a loaded machine must not slow the
// emulated wire down.
class RateBucket {
 public:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    Clock::time_point start;  // when the first byte may cross
    Clock::time_point end;    // when the last byte has crossed
  };
  static constexpr auto kCatchUp = std::chrono::milliseconds(100);
  // Reserves the port for `bytes` of payload (charged with their framing, ethernet_link.hpp)
  // after everything reserved before them; `catch_up`: how far behind now the slot may
  // start (0 for a caller that was idle).
  Slot reserve(std::size_t bytes, std::uint64_t bits_per_s, Clock::duration catch_up);
  void reset();

 private:
  std::mutex mutex_;
  Clock::time_point next_free_{};
};

class PortShaper {
 public:
  void configure(const LinkSpec& spec);
  LinkSpec spec() const;
  // Egress: when `bytes` may be written (their slot's start plus the latency). Ingress:
  // when `bytes` just read have crossed the port (their slot's end); the reader waits
  // until then before it uses them or reads more. Unshaped: now.
  RateBucket::Clock::time_point send_at(std::size_t bytes, bool backlogged);
  RateBucket::Clock::time_point received_at(std::size_t bytes, bool backlogged);

 private:
  mutable std::mutex mutex_;
  LinkSpec spec_;
  RateBucket egress_, ingress_;
};

}  // namespace dpushard::net
