#pragma once
// The requests of every client, queued in arrival order and run by `workers` threads: as
// many as the executor keeps frames in flight (InferenceExecutor::max_in_flight). Bounded:
// a full queue refuses (the server answers 503) instead of growing without end.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dpushard::serve {

class RequestQueue {
 public:
  RequestQueue(int workers, std::size_t capacity);
  // Stops the workers after the jobs they are running; queued jobs are dropped.
  ~RequestQueue();
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // False (and `job` not kept) when `capacity` jobs are already waiting.
  bool try_push(std::function<void()> job);
  std::size_t depth() const;    // waiting, not yet running
  std::size_t running() const;  // being run by a worker
  std::size_t capacity() const { return capacity_; }

 private:
  void work();

  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dpushard::serve
