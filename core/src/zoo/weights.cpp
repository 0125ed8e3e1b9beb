#include "weights.hpp"

#include <cassert>

namespace dpushard::zoo {
namespace {

// splitmix64 (Steele, Lea, Flood 2014): a 64-bit counter through a strong mixer.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

}  // namespace

std::uint64_t stream_key(std::uint64_t seed, std::string_view name) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a of the name
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return mix64(mix64(seed + kGolden) ^ hash);
}

std::vector<std::int8_t> uniform_int8(std::uint64_t key, std::size_t count, int lo, int hi) {
  assert(lo <= hi && hi - lo < 256);
  const auto range = static_cast<std::uint64_t>(hi - lo + 1);
  std::vector<std::int8_t> out(count);
  std::uint64_t state = key;
  std::size_t i = 0;
  const auto draw = [&](std::uint64_t bits) {
    return static_cast<std::int8_t>(lo + static_cast<int>(((bits & 0xffffU) * range) >> 16));
  };
  for (; i + 4 <= count; i += 4) {
    state += kGolden;
    const std::uint64_t r = mix64(state);
    out[i] = draw(r);
    out[i + 1] = draw(r >> 16);
    out[i + 2] = draw(r >> 32);
    out[i + 3] = draw(r >> 48);
  }
  if (i < count) {
    state += kGolden;
    std::uint64_t r = mix64(state);
    for (; i < count; ++i, r >>= 16) out[i] = draw(r);
  }
  return out;
}

double uniform_int_variance(int lo, int hi) {
  const double n = hi - lo + 1;
  return (n * n - 1.0) / 12.0;
}

}  // namespace dpushard::zoo
