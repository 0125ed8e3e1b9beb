#pragma once
// Recycles payload buffers by exact size, so a steady stream of equal tensors is received
// without a fresh allocation, page faults or zero-filling per frame. Thread-safe: buffers
// are taken on the io thread and given back from compute threads.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace dpushard::net {

class BufferPool {
 public:
  explicit BufferPool(std::size_t max_cached_bytes = std::size_t{512} << 20)
      : max_cached_bytes_(max_cached_bytes) {}

  // A buffer of exactly `size` bytes with unspecified contents.
  std::vector<std::int8_t> take(std::size_t size);
  // Keeps `buffer` for a later take() of the same size, unless the pool is full.
  void give(std::vector<std::int8_t>&& buffer);

  std::size_t cached_bytes() const;

 private:
  const std::size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<std::vector<std::int8_t>>> free_;
  std::size_t cached_bytes_ = 0;
};

}  // namespace dpushard::net
