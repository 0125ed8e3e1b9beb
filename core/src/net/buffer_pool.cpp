// Payload buffers recycled by exact size; only lent buffers come back.

#include "dpushard/net/buffer_pool.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dpushard::net {

std::vector<std::int8_t> BufferPool::take(std::size_t size) {
  if (size == 0) return {};
  {
    std::lock_guard lock(mutex_);
    SizeClass& size_class = sizes_[size];
    ++size_class.lent;
    if (!size_class.free.empty()) {
      std::vector<std::int8_t> buffer = std::move(size_class.free.back());
      size_class.free.pop_back();
      cached_bytes_ -= size;
      return buffer;
    }
  }
  return std::vector<std::int8_t>(size);
}

void BufferPool::give(std::vector<std::int8_t>&& buffer) {
  const std::size_t size = buffer.size();
  if (size == 0) return;
  std::vector<std::int8_t> dropped;  // freed after the lock is released
  std::lock_guard lock(mutex_);
  auto it = sizes_.find(size);
  if (it == sizes_.end() || it->second.lent == 0) {
    dropped = std::move(buffer);  // not one of ours: nobody will take it back
    return;
  }
  --it->second.lent;
  if (cached_bytes_ + size > max_cached_bytes_) {
    dropped = std::move(buffer);
    return;
  }
  cached_bytes_ += size;
  it->second.free.push_back(std::move(buffer));
}

void BufferPool::release() {
  std::unordered_map<std::size_t, SizeClass> freed;
  {
    std::lock_guard lock(mutex_);
    // Loans are forgotten too: a buffer that comes back late is freed, not kept.
    freed.swap(sizes_);
    cached_bytes_ = 0;
  }
  freed.clear();
#if defined(__GLIBC__)
  // Tensors below glibc's mmap threshold live in the heap, which free() does not shrink.
  malloc_trim(0);
#endif
}

std::size_t BufferPool::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

}  // namespace dpushard::net
