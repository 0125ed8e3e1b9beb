// Fragment files of a plan (dpushard/plan/fragment_io.hpp): the one check of a recorded file's
// sha256, and the wire form of a fragment with unfixed outputs and the way back from it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/plan/fragment_io.hpp"

namespace dpushard {
namespace {

using ::testing::HasSubstr;

class RecordedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dpushard_plan_fragment_io_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    file_ = dir_ / "frag_int.xmodel";
    std::ofstream(file_, std::ios::binary) << "some bytes";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string error_of(const std::filesystem::path& path, const std::string& recorded) {
    try {
      (void)read_recorded_file(path, recorded, "plan fragment 'f'");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;
  std::filesystem::path file_;
};

TEST_F(RecordedFile, TheRecordedBytesAreReturned) {
  EXPECT_EQ(read_recorded_file(file_, sha256_file(file_), "plan fragment 'f'"), "some bytes");
}

TEST_F(RecordedFile, AnotherHashIsOneLineNamingBoth) {
  const std::string recorded(64, '0');
  EXPECT_EQ(error_of(file_, recorded), "plan fragment 'f': " + file_.string() + " has sha256 " +
                                           sha256_file(file_) + ", the plan records " + recorded);
  EXPECT_THAT(error_of(file_, ""), HasSubstr("the plan records none"));
  EXPECT_THAT(error_of(dir_ / "nothing.xmodel", sha256_file(file_)),
              HasSubstr((dir_ / "nothing.xmodel").string() + " is missing"));
}

TEST_F(RecordedFile, AFolderOrAFifoIsRefusedNamingThePath) {
  std::filesystem::create_directory(dir_ / "folder");
  EXPECT_THAT(error_of(dir_ / "folder", ""), HasSubstr("is a directory"));
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  EXPECT_THAT(error_of(dir_ / "fifo", ""), HasSubstr("is a FIFO"));
}

// in -> relu -> fix: the relu's float value is the fragment's unfixed output.
Graph relu_fragment(std::string& relu_name) {
  GraphBuilder b("frag");
  const auto x = b.input("in", {1, 2, 2, 4}, 4);
  b.relu("r", x, 4);
  Graph g = b.finish();
  for (const Op& op : g.ops())
    if (op.type == "relu") relu_name = op.name;
  return g;
}

TEST(WireFragment, AnUnfixedOutputGetsItsFixAndMapsBack) {
  std::string relu;
  Graph g = relu_fragment(relu);
  ASSERT_FALSE(relu.empty());
  PlanFragment f;
  f.name = "f";
  PlanTensor out;
  out.name = relu;
  out.shape = {1, 2, 2, 4};
  out.fix_point = 3;
  out.fixed = false;
  out.round_mode = RoundMode::Dpu;
  f.outputs.push_back(out);
  const std::size_t ops = g.ops().size();
  ASSERT_TRUE(wire_fragment(g, f));
  ASSERT_EQ(g.ops().size(), ops + 1);
  const Op* wire = g.find(relu + std::string(kWireSuffix));
  ASSERT_NE(wire, nullptr);
  EXPECT_EQ(wire->type, "fix");
  EXPECT_EQ(wire->producers("input"), std::vector<std::string>{relu});
  EXPECT_EQ(fix_point_of(g, wire->name), 3);
  EXPECT_EQ(wire->output.shape, out.shape);
  EXPECT_EQ(plan_output_name(g, *wire), relu);
  // Any other op keeps its name, a fix named like a wire but over another op too.
  for (const Op* o : g.outputs())
    if (o != wire) {
      EXPECT_EQ(plan_output_name(g, *o), o->name);
    }
  Op fake = make_fix_op("x__wire", relu, 3);
  EXPECT_EQ(plan_output_name(g, fake), "x__wire");
}

TEST(WireFragment, AFixedFragmentIsLeftAsWritten) {
  std::string relu;
  Graph g = relu_fragment(relu);
  PlanFragment f;
  PlanTensor out;
  out.name = g.outputs().front()->name;
  f.outputs.push_back(out);
  const std::size_t ops = g.ops().size();
  EXPECT_FALSE(wire_fragment(g, f));
  EXPECT_EQ(g.ops().size(), ops);
}

}  // namespace
}  // namespace dpushard
