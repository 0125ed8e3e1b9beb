// The payload buffer pool keeps only what it lent, within its cap, and frees all on release.

#include <gtest/gtest.h>

#include "dpushard/net/buffer_pool.hpp"

namespace dpushard::net {
namespace {

TEST(BufferPool, RecyclesWhatItLent) {
  BufferPool pool;
  std::vector<std::int8_t> a = pool.take(1000);
  const std::int8_t* storage = a.data();
  pool.give(std::move(a));
  EXPECT_EQ(pool.cached_bytes(), 1000u);
  EXPECT_EQ(pool.take(1000).data(), storage);
  EXPECT_EQ(pool.cached_bytes(), 0u);
}

TEST(BufferPool, FreesBuffersItNeverLent) {
  BufferPool pool;
  for (int i = 0; i < 100; ++i) pool.give(std::vector<std::int8_t>(4096));
  EXPECT_EQ(pool.cached_bytes(), 0u);
  // One loan admits one buffer back, not more.
  std::vector<std::int8_t> lent = pool.take(4096);
  pool.give(std::vector<std::int8_t>(4096));
  pool.give(std::vector<std::int8_t>(4096));
  EXPECT_EQ(pool.cached_bytes(), 4096u);
}

TEST(BufferPool, StaysWithinItsCap) {
  BufferPool pool(3000);
  std::vector<std::vector<std::int8_t>> out;
  for (int i = 0; i < 5; ++i) out.push_back(pool.take(1000));
  for (auto& buffer : out) pool.give(std::move(buffer));
  EXPECT_EQ(pool.cached_bytes(), 3000u);
}

TEST(BufferPool, ReleaseFreesEverythingAndForgetsLoans) {
  BufferPool pool;
  std::vector<std::int8_t> early = pool.take(512), late = pool.take(512);
  pool.give(std::move(early));
  pool.release();
  EXPECT_EQ(pool.cached_bytes(), 0u);
  pool.give(std::move(late));  // came back after the job ended: freed
  EXPECT_EQ(pool.cached_bytes(), 0u);
}

}  // namespace
}  // namespace dpushard::net
