// Token buckets for the emulated link.

#include "dpushard/net/link_shaper.hpp"

#include <algorithm>

#include "dpushard/perf/ethernet_link.hpp"

namespace dpushard::net {

RateBucket::Slot RateBucket::reserve(std::size_t bytes, std::uint64_t bits_per_s,
                                     Clock::duration catch_up) {
  const auto now = Clock::now();
  const auto duration = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
      ethernet::wire_seconds(static_cast<double>(bytes), static_cast<double>(bits_per_s))));
  const std::lock_guard lock(mutex_);
  const Clock::time_point start = std::max(now - catch_up, next_free_);
  next_free_ = start + duration;
  return {start, next_free_};
}

void RateBucket::reset() {
  const std::lock_guard lock(mutex_);
  next_free_ = {};
}

void PortShaper::configure(const LinkSpec& spec) {
  {
    const std::lock_guard lock(mutex_);
    spec_ = spec;
  }
  egress_.reset();
  ingress_.reset();
}

LinkSpec PortShaper::spec() const {
  const std::lock_guard lock(mutex_);
  return spec_;
}

RateBucket::Clock::time_point PortShaper::send_at(std::size_t bytes, bool backlogged) {
  const LinkSpec s = spec();
  if (!s.paced()) return RateBucket::Clock::now();
  const RateBucket::Clock::duration catch_up =
      backlogged ? RateBucket::Clock::duration(RateBucket::kCatchUp) + s.latency
                 : RateBucket::Clock::duration::zero();
  return egress_.reserve(bytes, s.bits_per_s, catch_up).start + s.latency;
}

RateBucket::Clock::time_point PortShaper::received_at(std::size_t bytes, bool backlogged) {
  const LinkSpec s = spec();
  if (!s.paced()) return RateBucket::Clock::now();
  const RateBucket::Clock::duration catch_up =
      backlogged ? RateBucket::Clock::duration(RateBucket::kCatchUp)
                 : RateBucket::Clock::duration::zero();
  return ingress_.reserve(bytes, s.bits_per_s, catch_up).end;
}

}  // namespace dpushard::net
