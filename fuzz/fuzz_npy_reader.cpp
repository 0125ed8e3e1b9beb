// libFuzzer target: the .npy reader of `exec --input` and `run --input` (parse_npy). Bad
// input must end in dpushard::Error; an array it accepts must hold exactly the values its
// shape counts. Anything else is a bug.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "dpushard/error.hpp"
#include "npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dpushard::cli::NpyArray;
  try {
    const NpyArray array = dpushard::cli::parse_npy(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    std::uint64_t count = 1;
    for (const std::int64_t dim : array.shape) {
      if (dim < 0) std::abort();
      count *= static_cast<std::uint64_t>(dim);
    }
    const std::uint64_t held =
        array.type == NpyArray::Type::Int8 ? array.int8.size() : array.float32.size();
    if (held != count) std::abort();
  } catch (const dpushard::Error&) {
  }
  return 0;
}
