// The preprocessing block: defaults from an input's shape, its checks, and its round trip
// through a graph's attributes.

#include <gtest/gtest.h>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/preprocessing.hpp"

namespace dpushard {
namespace {

TEST(Preprocessing, DefaultsFromTheInputShape) {
  const Preprocessing imagenet = default_preprocessing({1, 224, 224, 3}, "in");
  EXPECT_EQ(imagenet, Preprocessing{});
  EXPECT_EQ(imagenet.resize, 256);
  const Preprocessing cifar = default_preprocessing({1, 32, 32, 3}, "in");
  EXPECT_EQ(cifar.resize, 37);
  EXPECT_EQ(cifar.crop_height, 32);
  EXPECT_THROW(default_preprocessing({1, 3, 224, 224}, "in"), Error);
}

TEST(Preprocessing, ChecksAgainstTheInput) {
  Preprocessing p;
  EXPECT_NO_THROW(check_preprocessing(p, {1, 224, 224, 3}, "in"));
  EXPECT_THROW(check_preprocessing(p, {1, 112, 112, 3}, "in"), Error);
  p.resize = 200;
  EXPECT_THROW(check_preprocessing(p, {1, 224, 224, 3}, "in"), Error);
  p = Preprocessing{};
  p.std[1] = 0;
  EXPECT_THROW(check_preprocessing(p, {1, 224, 224, 3}, "in"), Error);
}

TEST(Preprocessing, RoundTripsThroughGraphAttributes) {
  Graph g("m");
  EXPECT_FALSE(recorded_preprocessing(g).has_value());
  Preprocessing p;
  p.mean = {0.5, 0.25, 0.125};
  p.std = {0.2, 0.3, 0.4};
  p.resize = 40;
  p.crop_height = 32;
  p.crop_width = 30;
  record_preprocessing(g, p);
  EXPECT_EQ(recorded_preprocessing(g), p);
  Graph copy("fragment");
  copy_preprocessing(g, copy);
  EXPECT_EQ(recorded_preprocessing(copy), p);
  g.attrs().erase("dpushard_preprocess_std");
  EXPECT_THROW(recorded_preprocessing(g), Error);
}

}  // namespace
}  // namespace dpushard
