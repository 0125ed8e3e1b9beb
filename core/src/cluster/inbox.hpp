#pragma once
// What the io thread hands to the orchestrator's thread: node events in arrival order.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "dpushard/net/protocol.hpp"

namespace dpushard::cluster {

using Clock = std::chrono::steady_clock;

struct Event {
  // kWake: no node's; an open-ended stream's frame_feed has news (RunOptions::on_streaming).
  enum class Kind { kReady, kMessage, kClosed, kWake };
  std::size_t node = 0;
  Kind kind = Kind::kMessage;
  net::Message message;
  std::string text;  // kReady: the worker's backend; kClosed: the reason
  Clock::time_point at = Clock::now();
  std::string endpoint = {};     // kReady: the address the connection reached (IP:PORT)
  std::uint32_t attempt = 0;     // the node's connection it came from (Orchestrator::Link)
  std::string worker_name = {};  // kReady: the name the worker gave in its CHALLENGE
};

class Inbox {
 public:
  void push(Event event) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }

  // The next event, or nullopt once `deadline` has passed.
  std::optional<Event> pop(Clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_until(lock, deadline, [this] { return !events_.empty(); }))
      return std::nullopt;
    Event event = std::move(events_.front());
    events_.pop_front();
    return event;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
};

}  // namespace dpushard::cluster
