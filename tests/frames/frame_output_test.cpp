// FrameOutputWriter: int8 and float32 .npy per frame and output, frames.jsonl and a
// classifier's predictions.jsonl in input order whatever order frames were written in.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/npy.hpp"
#include "dpushard/frames/frame_output.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using testing::ScratchDir;

QTensor logits(std::vector<std::int8_t> values) {
  return QTensor{"fc/out:0", {1, std::int64_t(values.size())}, 3, std::move(values)};
}

std::vector<json> lines(const std::filesystem::path& path) {
  std::istringstream in(testing::read_bytes(path));
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

TEST(FrameOutput, WritesInt8FloatAndPredictionsInInputOrder) {
  ScratchDir dir;
  FrameOutputWriter writer({dir / "out", true, 2});
  writer.write(2, "c.png", {logits({1, 9, 9, -4})});
  writer.record_error(1, "b.jpg", "b.jpg: corrupt or truncated JPEG (x)");
  writer.write(0, "a.jpg", {logits({5, -1, 7, 0})});
  writer.finish();

  const NpyArray q = read_npy(dir / "out" / "000002.fc_out_0.npy");
  EXPECT_EQ(q.type, NpyArray::Type::Int8);
  EXPECT_EQ(q.shape, (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(q.int8_values("q"), (std::vector<std::int8_t>{1, 9, 9, -4}));
  const NpyArray f = read_npy(dir / "out" / "000000.fc_out_0.float32.npy");
  EXPECT_EQ(f.type, NpyArray::Type::Float32);
  EXPECT_EQ(f.to_float(), (std::vector<float>{5 / 8.0F, -1 / 8.0F, 7 / 8.0F, 0.0F}));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "000001.fc_out_0.npy"));

  const auto predictions = lines(dir / "out" / "predictions.jsonl");
  ASSERT_EQ(predictions.size(), 3u);
  EXPECT_EQ(predictions[0]["file"], "a.jpg");
  EXPECT_EQ(predictions[0]["top_k"],
            json::parse(R"([{"class":2,"score":0.875},{"class":0,"score":0.625}])"));
  EXPECT_EQ(predictions[1]["file"], "b.jpg");
  EXPECT_TRUE(predictions[1].contains("error"));
  // Ties go to the lower index.
  EXPECT_EQ(predictions[2]["top_k"][0]["class"], 1);
  EXPECT_EQ(predictions[2]["top_k"][1]["class"], 2);
  const auto frames = lines(dir / "out" / "frames.jsonl");
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0]["outputs"],
            json::parse(R"(["000000.fc_out_0.npy", "000000.fc_out_0.float32.npy"])"));
}

TEST(FrameOutput, NoPredictionsForAModelThatIsNotAClassifier) {
  ScratchDir dir;
  FrameOutputWriter writer({dir / "out", false, 5});
  writer.write(0, "a.npy", {QTensor{"map", {1, 2, 2, 1}, 0, {1, 2, 3, 4}}});
  writer.finish();
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "000000.map.npy"));
  EXPECT_TRUE(std::filesystem::exists(dir / "out" / "frames.jsonl"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out" / "predictions.jsonl"));
}

TEST(FrameOutput, RefusesUncomputedOutputsAndAFileAsTheFolder) {
  ScratchDir dir;
  testing::write_bytes(dir / "file", "x");
  EXPECT_THROW(FrameOutputWriter({dir / "file", false, 5}), Error);
  FrameOutputWriter writer({dir / "out", false, 5});
  QTensor timing_only = logits({0, 0});
  timing_only.computed = false;
  EXPECT_THROW(writer.write(0, "a.npy", {timing_only}), Error);
}

}  // namespace
}  // namespace dpushard
