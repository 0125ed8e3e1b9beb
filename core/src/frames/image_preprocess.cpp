// torchvision 0.14's Resize -> CenterCrop -> ToTensor -> Normalize on a PIL RGB image.

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/frames/image.hpp"

namespace dpushard {

std::vector<float> preprocess_image(const RgbImage& image, const Preprocessing& p) {
  // _compute_resized_output_size: the shorter side becomes p.resize, the longer one
  // int(p.resize * long / short) (truncated, in Python's float arithmetic).
  const bool portrait = image.width <= image.height;
  const int shorter = portrait ? image.width : image.height;
  const int longer = portrait ? image.height : image.width;
  const int new_long = static_cast<int>(double(p.resize) * double(longer) / double(shorter));
  const int width = portrait ? p.resize : new_long;
  const int height = portrait ? new_long : p.resize;
  const RgbImage resized = resize_bilinear(image, width, height);
  if (p.crop_height > resized.height || p.crop_width > resized.width)
    throw Error("preprocessing: crop " + std::to_string(p.crop_height) + "x" +
                std::to_string(p.crop_width) + " is larger than the resized image " +
                std::to_string(resized.height) + "x" + std::to_string(resized.width));
  // center_crop: int(round((size - crop) / 2.0)), Python's round (half to even), which is
  // nearbyint in the default rounding mode.
  const int top = static_cast<int>(std::nearbyint((resized.height - p.crop_height) / 2.0));
  const int left = static_cast<int>(std::nearbyint((resized.width - p.crop_width) / 2.0));
  std::vector<float> out;
  const auto at = [](int v) { return static_cast<std::size_t>(v); };
  out.reserve(at(p.crop_height) * at(p.crop_width) * 3);
  const std::array<float, 3> mean = {float(p.mean[0]), float(p.mean[1]), float(p.mean[2])};
  const std::array<float, 3> std_dev = {float(p.std[0]), float(p.std[1]), float(p.std[2])};
  for (int y = 0; y < p.crop_height; ++y)
    for (int x = 0; x < p.crop_width; ++x)
      for (int c = 0; c < 3; ++c) {
        const std::uint8_t v =
            resized.pixels[(at(top + y) * at(resized.width) + at(left + x)) * 3 + at(c)];
        out.push_back((float(v) / 255.0F - mean[at(c)]) / std_dev[at(c)]);
      }
  return out;
}

}  // namespace dpushard
