// A build without DPUSHARD_WITH_IMAGES: images are refused with one line.

#include <filesystem>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/frames/image.hpp"

namespace dpushard {

bool images_supported() { return false; }

RgbImage decode_image(const std::filesystem::path& path) {
  return decode_image_bytes("", path.string());
}

RgbImage decode_image_bytes(const std::string&, const std::string& label) {
  throw Error(label +
              ": this dpushard was built without image support (DPUSHARD_WITH_IMAGES=OFF; "
              "it needs libturbojpeg0-dev and libpng-dev)");
}

}  // namespace dpushard
