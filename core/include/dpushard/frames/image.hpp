#pragma once
// Images as model inputs: JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libpng) decoded to
// 8-bit RGB the way PIL's Image.open(f).convert("RGB") does (torchvision's default loader):
// grayscale is replicated into R, G and B, alpha is dropped (not composited), palettes are
// expanded, and 16-bit PNG samples keep their high byte (PIL clips 16-bit grayscale at 255
// instead). Then the torchvision transform of a Preprocessing block (preprocessing.hpp).
// Built with DPUSHARD_WITH_IMAGES; a build without it refuses images with one line.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/graph/preprocessing.hpp"

namespace dpushard {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  // row-major R, G, B
};

// True when this build decodes images (DPUSHARD_WITH_IMAGES).
bool images_supported();

// True for the file names taken as images: .jpg, .jpeg, .png (any case).
bool is_image_file_name(const std::filesystem::path& path);

// Decodes the JPEG or PNG at `path` (told apart by the file's first bytes). A corrupt or
// truncated file, or one in neither format, throws one dpushard::Error naming the file.
RgbImage decode_image(const std::filesystem::path& path);
// The same for a file's bytes already in memory (a request body); `label` names it in errors.
RgbImage decode_image_bytes(const std::string& bytes, const std::string& label);

// PIL's Image.resize((width, height), Image.BILINEAR) on an RGB image: a triangle filter
// whose support grows with the scale when downscaling (antialiased), coefficients in
// PIL's 22-bit fixed point, a horizontal pass then a vertical one, each rounded to 8 bits.
RgbImage resize_bilinear(const RgbImage& image, int width, int height);

// torchvision's Resize(p.resize) (shorter side to p.resize, the other int(p.resize * long /
// short)), CenterCrop(crop_height, crop_width), ToTensor() and Normalize(mean, std) in
// float32: crop_height * crop_width * 3 values, NHWC, channels RGB.
std::vector<float> preprocess_image(const RgbImage& image, const Preprocessing& p);

}  // namespace dpushard
