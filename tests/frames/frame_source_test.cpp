// FrameSource: frames in order from one .npy (a frame or a batch), a folder of .npy files
// and seeded random values; the one-line errors for what leaves nothing to run.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/npy.hpp"
#include "dpushard/frames/frame_source.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

using testing::ScratchDir;

const InputSpec kSpec{"in", {1, 2, 2, 3}, 4, RoundMode::Dpu};

NpyArray int8_array(std::vector<std::int64_t> shape, int first_value) {
  NpyArray a;
  a.type = NpyArray::Type::Int8;
  a.shape = std::move(shape);
  for (std::int64_t i = 0; i < a.element_count(); ++i)
    a.data.push_back(static_cast<char>((first_value + i) % 128));
  return a;
}

std::vector<std::int8_t> values(const NpyArray& a, std::int64_t frame, std::int64_t per_frame) {
  std::vector<std::int8_t> v;
  for (std::int64_t i = 0; i < per_frame; ++i)
    v.push_back(static_cast<std::int8_t>(a.data[std::size_t(frame * per_frame + i)]));
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FrameSource, OneNpyFrameIsOneFrame) {
  ScratchDir dir;
  const NpyArray a = int8_array({1, 2, 2, 3}, 5);
  write_npy(dir / "one.npy", a);
  const FrameSource source({(dir / "one.npy").string()}, {kSpec}, std::nullopt, "m");
  ASSERT_EQ(source.size(), 1u);
  EXPECT_EQ(source.source(0), "one.npy");
  const Frame f = source.frame(0);
  ASSERT_EQ(f.inputs.size(), 1u);
  EXPECT_EQ(f.inputs[0].name, "in");
  EXPECT_EQ(f.inputs[0].shape, kSpec.shape);
  EXPECT_EQ(f.inputs[0].fix_point, 4);
  EXPECT_EQ(f.inputs[0].data, values(a, 0, 12));
}

TEST(FrameSource, BatchWithAndWithoutTheLeadingOne) {
  ScratchDir dir;
  const NpyArray flat = int8_array({3, 2, 2, 3}, 1);       // [N, H, W, C]
  const NpyArray nested = int8_array({3, 1, 2, 2, 3}, 1);  // [N, 1, H, W, C]
  write_npy(dir / "flat.npy", flat);
  write_npy(dir / "nested.npy", nested);
  for (const char* name : {"flat.npy", "nested.npy"}) {
    const FrameSource source({(dir / name).string()}, {kSpec}, std::nullopt, "m");
    ASSERT_EQ(source.size(), 3u) << name;
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(source.source(i), std::string(name) + "[" + std::to_string(i) + "]");
      EXPECT_EQ(source.frame(i).inputs[0].data, values(flat, std::int64_t(i), 12)) << name;
    }
  }
}

TEST(FrameSource, Float32IsQuantizedWithTheRoundMode) {
  ScratchDir dir;
  NpyArray a;
  a.type = NpyArray::Type::Float32;
  a.shape = {2, 2, 2, 3};
  for (int i = 0; i < 24; ++i) {
    const float v = 0.03125F * float(i - 12);  // multiples of 2^-5: exact halves at fp 4
    a.data.append(reinterpret_cast<const char*>(&v), 4);
  }
  write_npy(dir / "f.npy", a);
  const FrameSource source({(dir / "f.npy").string()}, {kSpec}, std::nullopt, "m");
  ASSERT_EQ(source.size(), 2u);
  const QTensor t = source.frame(1).inputs[0];
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(t.data[std::size_t(i)], quantize(0.03125 * (i + 12 - 12), 4, RoundMode::Dpu));
}

TEST(FrameSource, FolderInNameOrderLeavingOtherFilesOut) {
  ScratchDir dir;
  std::filesystem::create_directories(dir / "frames");
  const std::vector<std::string> names = {"b.npy", "a.npy", "c.npy"};
  for (std::size_t i = 0; i < names.size(); ++i)
    write_npy(dir / "frames" / names[i], int8_array({1, 2, 2, 3}, int(i) * 10));
  testing::write_bytes(dir / "frames" / "README.txt", "x");
  const FrameSource source({(dir / "frames").string()}, {kSpec}, std::nullopt, "m");
  ASSERT_EQ(source.size(), 3u);
  EXPECT_EQ(source.source(0), "a.npy");
  EXPECT_EQ(source.source(1), "b.npy");
  EXPECT_EQ(source.source(2), "c.npy");
  EXPECT_EQ(source.frame(0).inputs[0].data, values(int8_array({1, 2, 2, 3}, 10), 0, 12));
  ASSERT_EQ(source.notes().size(), 1u);
  EXPECT_NE(source.notes()[0].find("1 file(s)"), std::string::npos) << source.notes()[0];
}

TEST(FrameSource, ABadFileInAFolderFailsOnlyItsFrame) {
  ScratchDir dir;
  std::filesystem::create_directories(dir / "frames");
  write_npy(dir / "frames" / "a.npy", int8_array({1, 2, 2, 3}, 0));
  write_npy(dir / "frames" / "b.npy", int8_array({1, 2, 2, 4}, 0));
  write_npy(dir / "frames" / "c.npy", int8_array({1, 2, 2, 3}, 0));
  const FrameSource source({(dir / "frames").string()}, {kSpec}, std::nullopt, "m");
  ASSERT_EQ(source.size(), 3u);
  EXPECT_NO_THROW(source.frame(0));
  const std::string e = error_of([&] { source.frame(1); });
  EXPECT_NE(e.find((dir / "frames" / "b.npy").string()), std::string::npos) << e;
  EXPECT_NE(e.find("does not match input 'in'"), std::string::npos) << e;
  EXPECT_NO_THROW(source.frame(2));
}

TEST(FrameSource, SeedGivesExecsRandomFrame) {
  const FrameSource source({kSpec}, 7);
  ASSERT_EQ(source.size(), 1u);
  EXPECT_EQ(source.source(0), "seed 7");
  EXPECT_EQ(source.frame(0).inputs[0], random_qtensor("in", kSpec.shape, 4, 7));
}

TEST(FrameSource, OneLineErrorsForWhatLeavesNothingToRun) {
  ScratchDir dir;
  write_npy(dir / "wrong.npy", int8_array({2, 2, 3}, 0));
  write_npy(dir / "zero.npy", int8_array({0, 2, 2, 3}, 0));
  write_npy(dir / "two.npy", int8_array({2, 2, 2, 3}, 0));
  write_npy(dir / "three.npy", int8_array({3, 2, 2, 3}, 0));
  NpyArray i16 = int8_array({1, 2, 2, 3}, 0);
  i16.type = NpyArray::Type::Int16;
  i16.data += i16.data;
  write_npy(dir / "i16.npy", i16);
  std::filesystem::create_directories(dir / "empty");
  const auto open = [&](std::vector<std::string> paths, std::vector<InputSpec> specs) {
    return error_of([&] { FrameSource(paths, specs, std::nullopt, "model.xmodel"); });
  };
  const auto p = [&](const char* n) { return (dir / n).string(); };
  EXPECT_NE(open({p("wrong.npy")}, {kSpec}).find("wrong.npy: shape (2,2,3) does not match"),
            std::string::npos);
  EXPECT_NE(open({p("zero.npy")}, {kSpec}).find("zero.npy: shape (0,2,2,3)"), std::string::npos);
  EXPECT_NE(open({p("i16.npy")}, {kSpec}).find("i16.npy: dtype '<i2'"), std::string::npos);
  EXPECT_NE(open({p("missing.npy")}, {kSpec}).find("missing.npy: no such file or folder"),
            std::string::npos);
  EXPECT_NE(open({p("empty")}, {kSpec}).find("empty: the folder holds no"), std::string::npos);
  EXPECT_NE(open({p("two.npy"), p("two.npy")}, {kSpec}).find("model.xmodel: the model has 1 input"),
            std::string::npos);
  InputSpec second = kSpec;
  second.name = "in2";
  EXPECT_NE(open({p("two.npy"), p("three.npy")}, {kSpec, second})
                .find("three.npy: 3 frame(s) for input 'in2', but 2 for 'in'"),
            std::string::npos);
  for (const auto& e : {open({p("wrong.npy")}, {kSpec}), open({p("empty")}, {kSpec})})
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

}  // namespace
}  // namespace dpushard
