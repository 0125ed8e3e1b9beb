#pragma once
// Seeded int8 values for the zoo's weights: one splitmix64 stream per tensor, keyed by the
// model seed and the tensor's name, so a model is reproducible from its seed and every
// tensor (every expert's) gets its own values.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace dpushard::zoo {

// The stream key of tensor `name` in a model generated from `seed`.
std::uint64_t stream_key(std::uint64_t seed, std::string_view name);

// `count` values uniform on [lo, hi] (hi - lo < 256) from the stream `key`: each
// splitmix64 call yields four 16-bit draws, each mapped to the range by a multiply-shift
// (bias below 1/256 of a level). This is the generation hot loop of a 300M model.
std::vector<std::int8_t> uniform_int8(std::uint64_t key, std::size_t count, int lo, int hi);

// Variance of a value uniform on the integers [lo, hi].
double uniform_int_variance(int lo, int hi);

}  // namespace dpushard::zoo
