// parse_count and parse_input_shape: the accepted forms and one-line errors for the rest.

#include <gtest/gtest.h>

#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/zoo/zoo.hpp"

namespace dpushard {
namespace {

TEST(ParseCount, AcceptsSuffixesDecimalsAndPlainIntegers) {
  EXPECT_EQ(parse_count("100M"), 100'000'000);
  EXPECT_EQ(parse_count("2.5M"), 2'500'000);
  EXPECT_EQ(parse_count("750K"), 750'000);
  EXPECT_EQ(parse_count("750k"), 750'000);
  EXPECT_EQ(parse_count("1G"), 1'000'000'000);
  EXPECT_EQ(parse_count("0.3G"), 300'000'000);
  EXPECT_EQ(parse_count("12345"), 12'345);
  EXPECT_EQ(parse_count("1.125K"), 1'125);
  EXPECT_EQ(parse_count(".5M"), 500'000);
}

TEST(ParseCount, RejectsJunkNegativeZeroAndFractions) {
  for (const std::string bad :
       {"", "M", "abc", "12X", "1.2.3M", "1e6", " 5M", "5M ", "5MM", "-5M", "-1", "0", "0M", "0.0K",
        "2.5", "1.0001K", "99999999999999999999", "9999999999G"}) {
    EXPECT_THROW(parse_count(bad), Error) << "'" << bad << "'";
  }
}

TEST(ParseCount, ErrorNamesTheText) {
  try {
    parse_count("12X");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'12X'"), std::string::npos) << e.what();
  }
}

TEST(ParseInputShape, ReadsHeightWidthChannels) {
  EXPECT_EQ(parse_input_shape("224x224x3"), (std::array<std::int64_t, 3>{224, 224, 3}));
  EXPECT_EQ(parse_input_shape("32X64X1"), (std::array<std::int64_t, 3>{32, 64, 1}));
}

TEST(ParseInputShape, RejectsMalformedShapes) {
  for (const std::string bad : {"", "224", "224x224", "224x224x3x1", "224xx3", "x224x3", "224x224x",
                                "224x0x3", "a x b x c", "-1x2x3", "224x224x3 ", "100000x2x3"}) {
    EXPECT_THROW(parse_input_shape(bad), Error) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace dpushard
