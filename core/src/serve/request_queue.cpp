// The bounded request queue and its worker threads.

#include "request_queue.hpp"

#include <utility>

namespace dpushard::serve {

RequestQueue::RequestQueue(int workers, std::size_t capacity) : capacity_(capacity) {
  for (int i = 0; i < workers; ++i) workers_.emplace_back([this] { work(); });
}

RequestQueue::~RequestQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

bool RequestQueue::try_push(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

std::size_t RequestQueue::depth() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

std::size_t RequestQueue::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

void RequestQueue::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++running_;
    }
    job();  // jobs catch their own errors: a failed frame answers its own client
    std::lock_guard lock(mutex_);
    --running_;
  }
}

}  // namespace dpushard::serve
