// libFuzzer target: the image decoders (decode_image_bytes: JPEG through TurboJPEG, PNG
// through libpng; `exec`/`run --input` images). Bad input must end in dpushard::Error; an
// image it accepts must hold width x height RGB pixels and go through the resize. Anything
// else is a bug.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/frames/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const dpushard::RgbImage image = dpushard::decode_image_bytes(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.img");
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() !=
            static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.height) * 3)
      std::abort();
    if (image.width <= 4096 && image.height <= 4096) {
      const dpushard::RgbImage small = dpushard::resize_bilinear(image, 7, 5);
      if (small.pixels.size() != 7 * 5 * 3) std::abort();
    }
  } catch (const dpushard::Error&) {
  }
  return 0;
}
