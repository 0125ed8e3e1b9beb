// Images decoded and preprocessed as torchvision does: JPEG and PNG (RGB, grayscale, RGBA,
// palette; odd sizes) written by tests/frames/make_images.py with PIL, which also writes
// PIL's decoding, torchvision's Resize and its whole transform. Decoding and resizing match
// PIL value for value; the int8 input is within one step of torchvision's floats quantized.

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/npy.hpp"
#include "dpushard/frames/frame_source.hpp"
#include "dpushard/frames/image.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

const std::vector<std::string> kImages = {"rgb_61x45.jpg",  "gray_50x80.jpg", "rgb_37x50.png",
                                          "gray_40x40.png", "rgba_70x33.png", "palette_29x31.png",
                                          "rgb_403x301.jpg"};

// make_images.py's output for one transform, made once for the whole suite: every test runs
// in its own process, so the images are kept in the build tree under the script's hash (a
// changed script makes new ones) and moved into place whole by a rename.
fs::path images(int resize, int crop) {
  const std::string script = std::string(DPUSHARD_SOURCE_DIR) + "/tests/frames/make_images.py";
  const std::size_t version = std::hash<std::string>{}(testing::read_bytes(script));
  const fs::path dir =
      fs::path(DPUSHARD_FRAMES_WORK) / ("images_" + std::to_string(resize) + "_" +
                                        std::to_string(crop) + "_" + std::to_string(version));
  if (fs::exists(dir)) return dir;
  const fs::path temp = dir.string() + ".tmp." + std::to_string(::getpid());
  const std::string command = "/usr/bin/python3 '" + script + "' '" + temp.string() + "' " +
                              std::to_string(resize) + " " + std::to_string(crop) + " " +
                              std::to_string(crop) + " >/dev/null";
  if (std::system(command.c_str()) != 0)
    throw Error(
        "make_images.py failed: these tests need /usr/bin/python3 with python3-pil, "
        "python3-torch and python3-torchvision (scripts/install-deps.sh)");
  std::error_code ec;
  fs::rename(temp, dir, ec);  // another test may have put its copy there first
  if (ec) fs::remove_all(temp);
  return dir;
}

std::vector<std::uint8_t> uint8_values(const fs::path& path) {
  const NpyArray a = read_npy(path);
  EXPECT_EQ(a.type, NpyArray::Type::UInt8) << path;
  return {a.data.begin(), a.data.end()};
}

TEST(Image, DecodesAsPilConvertRgb) {
  const fs::path dir = images(36, 32);
  for (const std::string& name : kImages) {
    const RgbImage image = decode_image(dir / name);
    const NpyArray expected = read_npy(dir / (name + ".decoded.npy"));
    ASSERT_EQ(expected.shape, (std::vector<std::int64_t>{image.height, image.width, 3})) << name;
    EXPECT_EQ(image.pixels, uint8_values(dir / (name + ".decoded.npy"))) << name;
  }
}

TEST(Image, ResizesAsPilBilinear) {
  const fs::path dir = images(36, 32);
  for (const std::string& name : kImages) {
    const NpyArray expected = read_npy(dir / (name + ".resized.npy"));
    const RgbImage resized =
        resize_bilinear(decode_image(dir / name), static_cast<int>(expected.shape[1]),
                        static_cast<int>(expected.shape[0]));
    EXPECT_EQ(resized.pixels, uint8_values(dir / (name + ".resized.npy"))) << name;
  }
}

// Our int8 input against torchvision's floats quantized at the same fix point.
void expect_within_one_step(int resize, int crop, int fix_point) {
  const fs::path dir = images(resize, crop);
  Preprocessing p;
  p.resize = resize;
  p.crop_height = p.crop_width = crop;
  const InputSpec spec{"input", {1, crop, crop, 3}, fix_point, RoundMode::Dpu};
  for (const std::string& name : kImages) {
    const QTensor ours = tensor_from_image(dir / name, spec, p);
    const std::vector<float> reference = read_npy(dir / (name + ".torchvision.npy")).to_float();
    ASSERT_EQ(ours.data.size(), reference.size()) << name;
    int worst = 0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
      const double expected =
          std::clamp(std::round(std::ldexp(double{reference[i]}, fix_point)), -128.0, 127.0);
      worst = std::max(worst, static_cast<int>(std::abs(ours.data[i] - expected)));
    }
    EXPECT_LE(worst, 1) << name << " at resize " << resize << " crop " << crop;
  }
}

TEST(Image, WithinOneInt8StepOfTorchvisionSmall) { expect_within_one_step(36, 32, 5); }
TEST(Image, WithinOneInt8StepOfTorchvisionImageNet) { expect_within_one_step(256, 224, 6); }

TEST(Image, CorruptOrTruncatedIsOneLineNamingTheFile) {
  const fs::path dir = images(36, 32);
  ScratchDir scratch;
  const std::string jpeg = testing::read_bytes(dir / "rgb_61x45.jpg");
  const std::string png = testing::read_bytes(dir / "rgb_37x50.png");
  const std::map<std::string, std::string> bad = {
      {"truncated.jpg", jpeg.substr(0, jpeg.size() / 2)},
      {"truncated.png", png.substr(0, png.size() / 2)},
      {"crc.png", png.substr(0, 40) + "XXXX" + png.substr(44)},
      {"text.png", "not an image at all"},
      {"empty.jpg", ""},
  };
  for (const auto& [name, bytes] : bad) {
    testing::write_bytes(scratch / name, bytes);
    try {
      decode_image(scratch / name);
      ADD_FAILURE() << name << " decoded";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find((scratch / name).string()), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace dpushard
