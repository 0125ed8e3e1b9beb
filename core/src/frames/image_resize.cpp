// PIL 9's ImagingResample (libImaging/Resample.c) for 8-bit images with the bilinear filter,
// so that images resized here match torchvision's Resize on a PIL image value for value.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/frames/image.hpp"

namespace dpushard {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // PIL's PRECISION_BITS for 8-bit images
constexpr std::size_t kChannels = 3;

std::size_t to_size(int v) { return static_cast<std::size_t>(v); }

double triangle(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// For each output pixel, the first input pixel it reads and its fixed-point weights.
struct Coefficients {
  std::size_t ksize = 0;
  std::vector<std::size_t> first;     // per output pixel
  std::vector<std::size_t> count;     // per output pixel
  std::vector<std::int32_t> weights;  // out_size * ksize
};

// precompute_coeffs() and normalize_coeffs_8bpc() of Resample.c, box [0, in_size].
Coefficients coefficients(int in_size, int out_size) {
  // PIL passes the box as floats: in1 - in0 is computed in float, then widened.
  const float in0 = 0.0F;
  const auto in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the bilinear filter's support is 1
  Coefficients c;
  c.ksize = to_size(static_cast<int>(std::ceil(support)) * 2 + 1);
  c.first.resize(to_size(out_size));
  c.count.resize(to_size(out_size));
  c.weights.assign(to_size(out_size) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = double{in0} + (xx + 0.5) * scale;
    const double ss = 1.0 / filter_scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[to_size(x)] = triangle((x + xmin - center + 0.5) * ss);
      ww += k[to_size(x)];
    }
    std::int32_t* weights = &c.weights[to_size(xx) * c.ksize];
    for (int x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[to_size(x)] / ww : k[to_size(x)];
      weights[x] = static_cast<std::int32_t>(w < 0 ? -0.5 + w * (1 << kPrecisionBits)
                                                   : 0.5 + w * (1 << kPrecisionBits));
    }
    c.first[to_size(xx)] = to_size(xmin);
    c.count[to_size(xx)] = to_size(std::max(xmax, 0));
  }
  return c;
}

std::uint8_t clip8(std::int64_t sum) {
  return static_cast<std::uint8_t>(std::clamp<std::int64_t>(sum >> kPrecisionBits, 0, 255));
}

// Resamples along x: rows [row0, row0 + rows) of `in` into an out_width-wide image.
RgbImage horizontal(const RgbImage& in, std::size_t row0, std::size_t rows, int out_width) {
  const Coefficients c = coefficients(in.width, out_width);
  const std::size_t width = to_size(out_width);
  RgbImage out{out_width, static_cast<int>(rows),
               std::vector<std::uint8_t>(width * rows * kChannels)};
  for (std::size_t y = 0; y < rows; ++y) {
    const std::uint8_t* src = &in.pixels[(row0 + y) * to_size(in.width) * kChannels];
    std::uint8_t* dst = &out.pixels[y * width * kChannels];
    for (std::size_t xx = 0; xx < width; ++xx) {
      const std::int32_t* k = &c.weights[xx * c.ksize];
      for (std::size_t ch = 0; ch < kChannels; ++ch) {
        std::int64_t sum = std::int64_t{1} << (kPrecisionBits - 1);
        for (std::size_t x = 0; x < c.count[xx]; ++x)
          sum += std::int64_t{src[(c.first[xx] + x) * kChannels + ch]} * k[x];
        dst[xx * kChannels + ch] = clip8(sum);
      }
    }
  }
  return out;
}

// Resamples along y with coefficients `c` whose first rows are relative to `in`'s row 0.
RgbImage vertical(const RgbImage& in, const Coefficients& c, int out_height) {
  const std::size_t row = to_size(in.width) * kChannels;
  RgbImage out{in.width, out_height, std::vector<std::uint8_t>(row * to_size(out_height))};
  for (std::size_t yy = 0; yy < to_size(out_height); ++yy) {
    const std::int32_t* k = &c.weights[yy * c.ksize];
    for (std::size_t i = 0; i < row; ++i) {
      std::int64_t sum = std::int64_t{1} << (kPrecisionBits - 1);
      for (std::size_t y = 0; y < c.count[yy]; ++y)
        sum += std::int64_t{in.pixels[(c.first[yy] + y) * row + i]} * k[y];
      out.pixels[yy * row + i] = clip8(sum);
    }
  }
  return out;
}

}  // namespace

RgbImage resize_bilinear(const RgbImage& image, int width, int height) {
  if (width <= 0 || height <= 0 || image.width <= 0 || image.height <= 0)
    throw Error("resize: empty image or target size");
  if (width == image.width && height == image.height) return image;  // PIL copies
  Coefficients vert = coefficients(image.height, height);
  const bool need_horizontal = width != image.width;
  const bool need_vertical = height != image.height;
  if (!need_vertical) return horizontal(image, 0, to_size(image.height), width);
  if (!need_horizontal) return vertical(image, vert, height);
  // Only the rows the vertical pass reads go through the horizontal pass, as in PIL.
  const std::size_t first_row = vert.first.front();
  const std::size_t last_row = vert.first.back() + vert.count.back();
  for (std::size_t& f : vert.first) f -= first_row;
  return vertical(horizontal(image, first_row, last_row - first_row, width), vert, height);
}

}  // namespace dpushard
