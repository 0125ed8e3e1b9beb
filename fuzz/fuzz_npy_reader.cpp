// libFuzzer target: the .npy reader (parse_npy; `exec`/`run --input`, `import --calib`). Bad
// input must end in dpushard::Error; an array it accepts must hold exactly the bytes its
// shape and dtype need, and write back to the same bytes' array. Anything else is a bug.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/base/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dpushard::NpyArray;
  try {
    const NpyArray array =
        dpushard::parse_npy(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
    std::uint64_t count = 1;
    for (const std::int64_t dim : array.shape) {
      if (dim < 0) std::abort();
      count *= static_cast<std::uint64_t>(dim);
    }
    if (array.data.size() != count * dpushard::npy_item_size(array.type)) std::abort();
    if (array.to_float().size() != count) std::abort();
    const NpyArray again = dpushard::parse_npy(dpushard::npy_bytes(array), "again.npy");
    if (again.shape != array.shape || again.type != array.type || again.data != array.data)
      std::abort();
  } catch (const dpushard::Error&) {
  }
  return 0;
}
