#pragma once
// Recycles payload buffers by exact size, so a steady stream of equal tensors is received
// without a fresh allocation, page faults or zero-filling per frame. Thread-safe: buffers
// are taken on the io thread and given back from compute threads.
//
// The pool only keeps what it lent: give() accepts a buffer of a size while buffers of
// that size are out on loan, and drops any other (a backend's output handed to the next
// fragment in the same process, say). So what it holds never exceeds the most buffers of
// each size in use at once, and memory stays flat in steady state whatever the plan.

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

  // A buffer of exactly `size` bytes with unspecified contents, on loan from the pool.
  std::vector<std::int8_t> take(std::size_t size);
  // Returns a buffer for a later take() of the same size. A buffer of a size the pool has
  // not lent out, or one over the pool's cap, is freed instead.
  void give(std::vector<std::int8_t>&& buffer);
  // Frees every buffer the pool holds and forgets its loans (a buffer given back later is
  // freed), then hands the freed heap back to the operating system. The worker calls this
  // when its last job ends.
  void release();

  std::size_t cached_bytes() const;

 private:
  struct SizeClass {
    std::vector<std::vector<std::int8_t>> free;
    std::size_t lent = 0;  // buffers of this size taken and not given back
  };
  const std::size_t max_cached_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, SizeClass> sizes_;
  std::size_t cached_bytes_ = 0;
};

}  // namespace dpushard::net
