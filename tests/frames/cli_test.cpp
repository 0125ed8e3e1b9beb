// `exec` and `run --local` on real inputs, run as a user would: .npy batches, .npy folders
// and image folders give, frame by frame, the bytes each frame gives alone; a truncated image
// is one line naming it while the others run; `import` records the preprocessing block and
// `inspect` shows it; predictions.jsonl on the ResNet-20 CIFAR-10 fixture.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "dpushard/base/npy.hpp"
#include "dpushard/graph/tensor.hpp"
#include "support/cli_runner.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using testing::quoted;
using testing::run_cli;
using testing::ScratchDir;
using Result = testing::CliResult;

constexpr int kFrames = 4;

std::string q(const fs::path& p) { return quoted(p.string()); }

// A small 10-class CNN on 32x32x3 inputs and its 3-node experts plan.
void make_model(const ScratchDir& dir) {
  ASSERT_EQ(run_cli(dir, "zoo cnn --params 300K --experts 3 --input 32x32x3 --classes 10 -o " +
                             q(dir / "model.xmodel"))
                .exit_code,
            0);
  ASSERT_EQ(run_cli(dir, "split " + q(dir / "model.xmodel") + " --nodes 3 --strategy experts -o " +
                             q(dir / "plan"))
                .exit_code,
            0);
}

NpyArray random_frames(int frames, std::uint64_t seed) {
  NpyArray a;
  a.type = NpyArray::Type::Int8;
  a.shape = {frames, 32, 32, 3};
  for (int f = 0; f < frames; ++f) {
    const QTensor t = random_qtensor("x", {1, 32, 32, 3}, 0, seed + std::uint64_t(f));
    a.data.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  }
  return a;
}

NpyArray frame_of(const NpyArray& batch, int f) {
  NpyArray a;
  a.type = batch.type;
  a.shape = {1, 32, 32, 3};
  a.data = batch.data.substr(std::size_t(f) * 3072, 3072);
  return a;
}

// The one output file of frame `index` in an --output folder.
std::string output_bytes(const fs::path& out, int index) {
  std::ostringstream prefix;
  prefix << std::setw(6) << std::setfill('0') << index << ".";
  for (const auto& entry : fs::directory_iterator(out)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix.str()) && !name.ends_with(".float32.npy"))
      return testing::read_bytes(entry.path());
  }
  ADD_FAILURE() << "no output for frame " << index << " in " << out;
  return "";
}

std::vector<json> jsonl(const fs::path& path) {
  std::istringstream in(testing::read_bytes(path));
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

void expect_ok(const Result& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 0) << what << ": " << r.err;
}

TEST(CliFrames, NpyBatchAndFolderGiveEachFrameAlonesBytes) {
  ScratchDir dir;
  make_model(dir);
  const NpyArray batch = random_frames(kFrames, 11);
  write_npy(dir / "batch.npy", batch);
  fs::create_directories(dir / "folder");
  for (int f = 0; f < kFrames; ++f) {
    write_npy(dir / ("alone" + std::to_string(f) + ".npy"), frame_of(batch, f));
    write_npy(dir / "folder" / ("frame" + std::to_string(f) + ".npy"), frame_of(batch, f));
  }
  const std::string model = q(dir / "model.xmodel");
  expect_ok(run_cli(dir, "exec " + model + " --input " + q(dir / "batch.npy") + " --output " +
                             q(dir / "out_batch") + " --float"),
            "exec batch");
  expect_ok(run_cli(dir, "exec " + model + " --input " + q(dir / "folder") + " --output " +
                             q(dir / "out_folder")),
            "exec folder");
  expect_ok(run_cli(dir, "run " + q(dir / "plan") + " --local --input " + q(dir / "batch.npy") +
                             " --output " + q(dir / "out_plan")),
            "run --local batch");
  for (int f = 0; f < kFrames; ++f) {
    const fs::path alone = dir / ("out_alone" + std::to_string(f));
    expect_ok(
        run_cli(dir, "exec " + model + " --input " +
                         q(dir / ("alone" + std::to_string(f) + ".npy")) + " --output " + q(alone)),
        "exec alone");
    const std::string expected = output_bytes(alone, 0);
    EXPECT_EQ(output_bytes(dir / "out_batch", f), expected) << "frame " << f;
    EXPECT_EQ(output_bytes(dir / "out_folder", f), expected) << "frame " << f;
    EXPECT_EQ(output_bytes(dir / "out_plan", f), expected) << "frame " << f;
  }
  // Different frames really differ (the comparison above could not pass by accident).
  EXPECT_NE(output_bytes(dir / "out_batch", 0), output_bytes(dir / "out_batch", 1));
  const auto predictions = jsonl(dir / "out_folder" / "predictions.jsonl");
  ASSERT_EQ(predictions.size(), std::size_t(kFrames));
  EXPECT_EQ(predictions[2]["file"], "frame2.npy");
  EXPECT_EQ(predictions[2]["top_k"].size(), 5u);
  EXPECT_EQ(jsonl(dir / "out_batch" / "frames.jsonl")[3]["file"], "batch.npy[3]");
}

// Images made with PIL: a JPEG, a grayscale PNG, an RGBA PNG, and a truncated JPEG.
void make_images(const fs::path& folder) {
  const std::string script =
      "import sys, numpy as np\n"
      "from PIL import Image\n"
      "d = sys.argv[1]\n"
      "r = np.random.default_rng(5)\n"
      "Image.fromarray(r.integers(0, 256, (45, 61, 3), np.uint8)).save(d + '/a.jpg', quality=90)\n"
      "Image.fromarray(r.integers(0, 256, (40, 39), np.uint8), 'L').save(d + '/b_gray.png')\n"
      "Image.fromarray(r.integers(0, 256, (33, 70, 4), np.uint8), 'RGBA').save(d + '/c_rgba.png')\n"
      "data = open(d + '/a.jpg', 'rb').read()\n"
      "open(d + '/d_truncated.jpg', 'wb').write(data[: len(data) // 2])\n";
  fs::create_directories(folder);
  testing::write_bytes(folder.parent_path() / "make.py", script);
  ASSERT_EQ(
      std::system(
          ("/usr/bin/python3 " + q(folder.parent_path() / "make.py") + " " + q(folder)).c_str()),
      0)
      << "needs /usr/bin/python3 with python3-pil and python3-numpy";
  fs::remove(folder.parent_path() / "make.py");
}

// Images need a build with DPUSHARD_WITH_IMAGES (libturbojpeg0-dev, libpng-dev).
#define DPUSHARD_REQUIRE_IMAGES()                                                    \
  do {                                                                               \
    if (!DPUSHARD_TEST_IMAGES) GTEST_SKIP() << "built without DPUSHARD_WITH_IMAGES"; \
  } while (false)

TEST(CliFrames, ImageFolderRunsEveryGoodImageAndNamesTheTruncatedOne) {
  DPUSHARD_REQUIRE_IMAGES();
  ScratchDir dir;
  make_model(dir);
  make_images(dir / "images");
  const std::string model = q(dir / "model.xmodel");
  const Result r = run_cli(dir, "exec " + model + " --input " + q(dir / "images") + " --output " +
                                    q(dir / "out") + " --top-k 3");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("dpushard: error: " + (dir / "images" / "d_truncated.jpg").string() +
                               ": corrupt or truncated JPEG"));
  EXPECT_THAT(r.err, HasSubstr("dpushard: error: 1 of 4 inputs failed"));
  EXPECT_THAT(r.err, HasSubstr("no preprocessing recorded with the model"));
  const auto predictions = jsonl(dir / "out" / "predictions.jsonl");
  ASSERT_EQ(predictions.size(), 4u);
  EXPECT_EQ(predictions[0]["file"], "a.jpg");
  EXPECT_EQ(predictions[0]["top_k"].size(), 3u);
  EXPECT_EQ(predictions[3]["file"], "d_truncated.jpg");
  EXPECT_THAT(predictions[3]["error"].get<std::string>(), HasSubstr("d_truncated.jpg"));

  const Result plan = run_cli(dir, "run " + q(dir / "plan") + " --local --input " +
                                       q(dir / "images") + " --output " + q(dir / "out_plan"));
  EXPECT_EQ(plan.exit_code, 1) << plan.err;
  const std::vector<std::string> good = {"a.jpg", "b_gray.png", "c_rgba.png"};
  for (int i = 0; i < 3; ++i) {
    const fs::path alone = dir / ("alone" + std::to_string(i));
    expect_ok(run_cli(dir, "exec " + model + " --input " +
                               q(dir / "images" / good[std::size_t(i)]) + " --output " + q(alone)),
              good[std::size_t(i)]);
    EXPECT_EQ(output_bytes(dir / "out", i), output_bytes(alone, 0)) << good[std::size_t(i)];
    EXPECT_EQ(output_bytes(dir / "out_plan", i), output_bytes(alone, 0)) << good[std::size_t(i)];
  }
  // A single truncated image is the command's one error line.
  const Result one =
      run_cli(dir, "exec " + model + " --input " + q(dir / "images" / "d_truncated.jpg"));
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_THAT(one.err, HasSubstr("d_truncated.jpg: corrupt or truncated JPEG"));
}

TEST(CliFrames, ImportRecordsThePreprocessingBlockAndInspectShowsIt) {
  DPUSHARD_REQUIRE_IMAGES();  // its last part runs an image through the model and its plan
  ScratchDir dir;
  const std::string export_se = "/usr/bin/python3 " +
                                q(fs::path(DPUSHARD_SOURCE_DIR) / "tests/onnx/make_models.py") +
                                " se " + q(dir / "onnx") + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(export_se.c_str()), 0)
      << "needs /usr/bin/python3 with python3-torch and python3-onnx";
  const std::string onnx = q(dir / "onnx" / "model.onnx");
  const Result imported =
      run_cli(dir, "import " + onnx +
                       " --calib-random 1 --mean 0.5,0.4,0.3 --std 0.2,0.25,0.3 "
                       "--resize 40 --crop 32 --json -o " +
                       q(dir / "m.xmodel"));
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  const json block = json::parse(R"({"mean": [0.5, 0.4, 0.3], "std": [0.2, 0.25, 0.3],
                                     "resize": 40, "crop": [32, 32]})");
  EXPECT_EQ(json::parse(imported.out)["preprocessing"], block);
  const Result inspected = run_cli(dir, "inspect " + q(dir / "m.xmodel") + " --json");
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_EQ(json::parse(inspected.out)["preprocessing"], block);
  const Result human = run_cli(dir, "inspect " + q(dir / "m.xmodel"));
  EXPECT_THAT(human.out,
              HasSubstr("preprocess   mean 0.5,0.4,0.3 std 0.2,0.25,0.3 resize 40 crop 32x32"));

  // Without flags the defaults for the 32x32 input are recorded and printed.
  const Result defaults =
      run_cli(dir, "import " + onnx + " --calib-random 1 -o " + q(dir / "d.xmodel"));
  ASSERT_EQ(defaults.exit_code, 0) << defaults.err;
  EXPECT_THAT(defaults.err, HasSubstr("preprocessing for images: mean 0.485,0.456,0.406 std "
                                      "0.229,0.224,0.225 resize 37 crop 32x32"));
  // A crop other than the input's size is one line, and nothing is written.
  const Result bad =
      run_cli(dir, "import " + onnx + " --calib-random 1 --crop 30 -o " + q(dir / "bad.xmodel"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("crop 30x30 is not input"));
  EXPECT_FALSE(fs::exists(dir / "bad.xmodel"));

  // A plan of the model carries the block: run --local uses it (no defaults note) and gives
  // exec's bytes for the image.
  make_images(dir / "images");
  ASSERT_EQ(run_cli(dir, "split " + q(dir / "m.xmodel") + " --nodes 2 --strategy pipeline -o " +
                             q(dir / "plan"))
                .exit_code,
            0);
  const std::string image = q(dir / "images" / "a.jpg");
  const Result exec = run_cli(dir, "exec " + q(dir / "m.xmodel") + " --input " + image +
                                       " --output " + q(dir / "out_exec"));
  expect_ok(exec, "exec image");
  const Result run = run_cli(dir, "run " + q(dir / "plan") + " --local --input " + image +
                                      " --output " + q(dir / "out_run"));
  expect_ok(run, "run image");
  EXPECT_THAT(run.err, ::testing::Not(HasSubstr("no preprocessing recorded")));
  EXPECT_EQ(output_bytes(dir / "out_run", 0), output_bytes(dir / "out_exec", 0));
}

TEST(CliFrames, PredictionsOnTheResNet20Fixture) {
  DPUSHARD_REQUIRE_FIXTURES();
  ScratchDir dir;
  NpyArray batch;
  batch.type = NpyArray::Type::Float32;
  batch.shape = {3, 32, 32, 3};
  for (int i = 0; i < 3 * 3072; ++i) {
    const float v = float((i * 7919) % 255) / 64.0F - 2.0F;
    batch.data.append(reinterpret_cast<const char*>(&v), 4);
  }
  write_npy(dir / "batch.npy", batch);
  const std::string resnet = q(testing::fixture(testing::kResNetInt));
  const Result r = run_cli(dir, "exec " + resnet + " --input " + q(dir / "batch.npy") +
                                    " --json --float --output " + q(dir / "out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  const auto predictions = jsonl(dir / "out" / "predictions.jsonl");
  ASSERT_EQ(predictions.size(), 3u);
  for (std::size_t f = 0; f < 3; ++f) {
    EXPECT_EQ(predictions[f]["file"], "batch.npy[" + std::to_string(f) + "]");
    const json& top5 = report["results"][f]["outputs"][0]["top5"];
    ASSERT_EQ(predictions[f]["top_k"].size(), 5u);
    for (std::size_t k = 0; k < 5; ++k) {
      EXPECT_EQ(predictions[f]["top_k"][k]["class"], top5[k]["class"]);
      EXPECT_EQ(predictions[f]["top_k"][k]["score"], top5[k]["value"]);
    }
    // The float32 file holds the dequantized logits the scores come from.
    std::ostringstream name;
    name << std::setw(6) << std::setfill('0') << f
         << ".CifarResNet__CifarResNet_Linear_fc__ret_fix.float32.npy";
    const std::vector<float> logits = read_npy(dir / "out" / name.str()).to_float();
    ASSERT_EQ(logits.size(), 10u);
    EXPECT_EQ(double(logits[predictions[f]["top_k"][0]["class"].get<std::size_t>()]),
              predictions[f]["top_k"][0]["score"].get<double>());
  }
}

}  // namespace
}  // namespace dpushard
