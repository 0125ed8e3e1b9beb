// JPEG through libjpeg-turbo's TurboJPEG API and PNG through libpng, both to 8-bit RGB as
// PIL's Image.open(f).convert("RGB") gives it (dpushard/frames/image.hpp).

#include <png.h>
#include <turbojpeg.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/regular_file.hpp"
#include "dpushard/frames/image.hpp"

namespace dpushard {
namespace {

// Far beyond any camera's frame; keeps a forged header from asking for gigabytes.
constexpr std::int64_t kMaxPixels = std::int64_t{1} << 26;  // 8192 x 8192

bool starts_with(const std::string& bytes, const unsigned char* magic, std::size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

void check_size(const std::string& label, std::int64_t width, std::int64_t height) {
  if (width <= 0 || height <= 0 || width * height > kMaxPixels)
    throw Error(label + ": image of " + std::to_string(width) + "x" + std::to_string(height) +
                " pixels is empty or larger than dpushard takes (2^26 pixels)");
}

RgbImage decode_jpeg(const std::string& bytes, const std::string& label) {
  const std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
  if (!handle) throw Error(label + ": cannot start the JPEG decoder");
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), data, size, &width, &height, &subsampling, &colorspace) !=
      0)
    throw Error(label + ": not a valid JPEG (" + tjGetErrorStr2(handle.get()) + ")");
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK)
    throw Error(label + ": CMYK JPEG images are not supported (convert it to RGB)");
  check_size(label, width, height);
  RgbImage image{width, height,
                 std::vector<std::uint8_t>(static_cast<std::size_t>(width) *
                                           static_cast<std::size_t>(height) * 3)};
  // Flags 0: the accurate integer DCT and fancy upsampling, libjpeg's defaults, as PIL uses.
  // A warning (a truncated file, corrupt data) fails too: PIL refuses truncated images.
  if (tjDecompress2(handle.get(), data, size, image.pixels.data(), width, 0, height, TJPF_RGB, 0) !=
      0)
    throw Error(label + ": corrupt or truncated JPEG (" + tjGetErrorStr2(handle.get()) + ")");
  return image;
}

struct PngSource {
  const std::string* bytes = nullptr;
  std::size_t offset = 0;
  char message[256] = {};
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (source->bytes->size() - source->offset < n) png_error(png, "the file ends early");
  std::memcpy(out, source->bytes->data() + source->offset, n);
  source->offset += n;
}

void png_on_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof source->message, "%s", message);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

RgbImage decode_png(const std::string& bytes, const std::string& label) {
  PngSource source;
  source.bytes = &bytes;
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, png_on_error, png_on_warning);
  if (png == nullptr) throw Error(label + ": cannot start the PNG decoder");
  png_infop info = png_create_info_struct(png);
  RgbImage image;
  std::vector<png_bytep> rows;
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw Error(label + ": corrupt or truncated PNG (" + source.message + ")");
  }
  png_set_read_fn(png, &source, png_read_bytes);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  check_size(label, width, height);
  // PIL's convert("RGB"): palettes expanded (their transparency ignored), grayscale
  // replicated, alpha dropped without compositing; 16-bit samples keep their high byte.
  const int color = png_get_color_type(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8)
    png_set_expand_gray_1_2_4_to_8(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_strip_16(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != std::size_t(width) * 3)
    png_error(png, "unexpected row layout after conversion to RGB");
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.pixels.resize(std::size_t(width) * height * 3);
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = &image.pixels[std::size_t(y) * width * 3];
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return image;
}

}  // namespace

bool images_supported() { return true; }

RgbImage decode_image(const std::filesystem::path& path) {
  return decode_image_bytes(read_regular_file(path), path.string());
}

RgbImage decode_image_bytes(const std::string& bytes, const std::string& label) {
  static constexpr unsigned char kJpeg[] = {0xFF, 0xD8, 0xFF};
  static constexpr unsigned char kPng[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (starts_with(bytes, kJpeg, sizeof kJpeg)) return decode_jpeg(bytes, label);
  if (starts_with(bytes, kPng, sizeof kPng)) return decode_png(bytes, label);
  throw Error(label + ": neither a JPEG nor a PNG image (by its first bytes)");
}

}  // namespace dpushard
