// Int8 tensors: element counts and deterministic random inputs.

#include "dpushard/graph/tensor.hpp"

#include <array>
#include <memory>

#include "dpushard/base/error.hpp"

namespace dpushard {

std::int64_t QTensor::element_count() const {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) count *= dim;
  return count;
}

namespace {

// splitmix64 (Steele, Lea, Flood 2014): a tiny generator with fully specified output, so
// the same seed gives the same tensor with every compiler and standard library.
std::uint64_t splitmix64(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// FNV-1a 64 of the tensor name, so two inputs of one model draw different values.
std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t hash = 0xCBF29CE484222325ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ULL;
  }
  return hash;
}

}  // namespace

QTensor random_qtensor(std::string name, std::vector<std::int64_t> shape, int fix_point,
                       std::uint64_t seed) {
  for (std::int64_t dim : shape)
    if (dim < 0) throw Error("random tensor '" + name + "': negative dimension");
  QTensor tensor{std::move(name), std::move(shape), fix_point, {}};
  std::uint64_t state = seed ^ fnv1a64(tensor.name);
  tensor.data.resize(static_cast<std::size_t>(tensor.element_count()));
  // The top byte of each draw, as a two's complement int8: uniform over [-128, 127].
  for (auto& value : tensor.data)
    value = static_cast<std::int8_t>(static_cast<std::uint8_t>(splitmix64(state) >> 56));
  return tensor;
}

}  // namespace dpushard
