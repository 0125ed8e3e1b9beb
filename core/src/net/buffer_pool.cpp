// Payload buffers recycled by exact size.

#include "buffer_pool.hpp"

namespace dpushard::net {

std::vector<std::int8_t> BufferPool::take(std::size_t size) {
  if (size == 0) return {};
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      std::vector<std::int8_t> buffer = std::move(it->second.back());
      it->second.pop_back();
      cached_bytes_ -= size;
      return buffer;
    }
  }
  return std::vector<std::int8_t>(size);
}

void BufferPool::give(std::vector<std::int8_t>&& buffer) {
  const std::size_t size = buffer.size();
  if (size == 0) return;
  std::lock_guard lock(mutex_);
  if (cached_bytes_ + size > max_cached_bytes_) return;  // dropped: freed by the caller
  cached_bytes_ += size;
  free_[size].push_back(std::move(buffer));
}

std::size_t BufferPool::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

}  // namespace dpushard::net
