// The ref backend's errors: one line naming the input, op or const at fault.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dpushard/base/error.hpp"
#include "ref_test_util.hpp"

namespace dpushard {
namespace {

using testing::add_fix;
using testing::add_op;
using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::q8;
using testing::qtensor;

Graph small_conv() {
  GraphBuilder b("conv");
  auto x = b.input("x", {1, 1, 1, 2}, 3);
  Conv2dSpec spec;
  spec.kernel = {1, 1};
  spec.pad = {0, 0, 0, 0};
  b.conv2d("c", x, b.constant("w", {1, 1, 1, 2}, q8({1, 1}), 0), std::nullopt, spec, 3);
  return b.finish();
}

std::string load_error(const Graph& g) {
  try {
    make_backend("ref")->load(g);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

std::string run_error(const Graph& g, const QTensor& input) {
  auto backend = make_backend("ref");
  backend->load(g);
  try {
    backend->run({input});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(RefErrors, WrongInputShape) {
  EXPECT_THAT(run_error(small_conv(), qtensor("x_fix", {1, 1, 2, 1}, 3, {1, 2})),
              AllOf(HasSubstr("x_fix"), HasSubstr("[1,1,2,1]"), HasSubstr("[1,1,1,2]")));
}

TEST(RefErrors, WrongFixPoint) {
  EXPECT_THAT(run_error(small_conv(), qtensor("x_fix", {1, 1, 1, 2}, 4, {1, 2})),
              AllOf(HasSubstr("x_fix"), HasSubstr("fix_point 4")));
}

TEST(RefErrors, WrongInputCount) {
  auto backend = make_backend("ref");
  backend->load(small_conv());
  EXPECT_THROW(backend->run({}), Error);
}

TEST(RefErrors, UnknownOpTypeIsNamed) {
  Graph g = small_conv();
  add_op(g, "mystery", "frobnicate", {{"input", {"c_fix"}}}, {}, {1, 1, 1, 1});
  add_fix(g, "mystery", 0);
  EXPECT_THAT(load_error(g), AllOf(HasSubstr("mystery"), HasSubstr("frobnicate")));
}

TEST(RefErrors, WeightsThatAreNotInt8MultiplesNameTheConst) {
  Graph g = small_conv();
  set_const_values(*g.find("w"), {1.0f, 0.3f});  // 0.3 * 2^0 is not an integer
  EXPECT_THAT(load_error(g), AllOf(HasSubstr("'w'"), HasSubstr("0.3")));
  set_const_values(*g.find("w"), {1.0f, 200.0f});  // out of int8 range
  EXPECT_THAT(load_error(g), HasSubstr("'w'"));
}

TEST(RefErrors, OutputWithoutFix) {
  Graph g = small_conv();
  add_op(g, "loose", "relu", {{"input", {"c_fix"}}}, {}, {1, 1, 1, 1});
  EXPECT_THAT(load_error(g), AllOf(HasSubstr("loose"), HasSubstr("without a fix")));
}

TEST(RefErrors, SharedFloatValue) {
  // The conv's float output feeds its fix and a second fix: there is no int8 to share.
  Graph g = small_conv();
  g.add_op(make_fix_op("c_fix2", "c", 2));
  g.find("c_fix2")->output.shape = {1, 1, 1, 1};
  EXPECT_THAT(load_error(g), HasSubstr("'c'"));
}

TEST(RefErrors, UnknownBackend) {
  try {
    make_backend("gpu");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("gpu"), HasSubstr("ref")));
  }
}

TEST(Registry, NamesAndInputSpecs) {
  const auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "ref"), names.end());
  const auto specs = input_specs(small_conv());
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].name, "x_fix");
  EXPECT_EQ(specs[0].shape, (std::vector<std::int64_t>{1, 1, 1, 2}));
  EXPECT_EQ(specs[0].fix_point, 3);
}

}  // namespace
}  // namespace dpushard
