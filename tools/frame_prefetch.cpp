#include "frame_prefetch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dpushard::cli {

FramePrefetch::FramePrefetch(const FrameSource& source, std::size_t depth)
    : source_(source), depth_(std::max<std::size_t>(depth, 1)) {}

FramePrefetch::~FramePrefetch() {
  // Frames read ahead but never taken (a run that ended early): wait for their readers,
  // which use source_.
  for (auto& pending : ahead_)
    if (pending.valid()) pending.wait();
}

void FramePrefetch::top_up() {
  while (ahead_.size() < depth_ && next_read_ < source_.size()) {
    ahead_.push_back(std::async(std::launch::async,
                                [this, index = next_read_] { return source_.frame(index); }));
    ++next_read_;
  }
}

Frame FramePrefetch::take(std::size_t index) {
  if (index != next_take_)
    throw std::logic_error("FramePrefetch: frame " + std::to_string(index) + " taken, expected " +
                           std::to_string(next_take_));
  top_up();
  if (ahead_.empty())
    throw std::logic_error("FramePrefetch: frame " + std::to_string(index) + " of " +
                           std::to_string(source_.size()));
  std::future<Frame> next = std::move(ahead_.front());
  ahead_.pop_front();
  ++next_take_;
  top_up();  // keep `depth` frames reading while this one is used
  return next.get();
}

}  // namespace dpushard::cli
