// Parsing of the zoo's command-line quantities: counts with K/M/G suffixes and
// HxWxC input shapes. Integer arithmetic only, so "2.5M" is exactly 2'500'000.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "dpushard/base/error.hpp"
#include "dpushard/zoo/zoo.hpp"

namespace dpushard {
namespace {

constexpr std::int64_t kMaxCount = std::int64_t{1} << 52;  // far above any model size

bool is_digit(char c) { return c >= '0' && c <= '9'; }

[[noreturn]] void bad_count(std::string_view text, std::string_view why) {
  throw Error("count '" + std::string(text) + "': " + std::string(why));
}

std::int64_t suffix_multiplier(char c) {
  switch (c) {
    case 'k':
    case 'K':
      return 1'000;
    case 'm':
    case 'M':
      return 1'000'000;
    case 'g':
    case 'G':
      return 1'000'000'000;
    default:
      return 0;
  }
}

// Appends digit `c` to `value`, failing when the result would exceed kMaxCount.
bool push_digit(std::int64_t& value, char c) {
  if (value > (kMaxCount - (c - '0')) / 10) return false;
  value = value * 10 + (c - '0');
  return true;
}

}  // namespace

std::int64_t parse_count(std::string_view text) {
  constexpr std::string_view kExpected =
      "expected a positive number with an optional K, M or G suffix (e.g. 100M, 2.5M, 750K)";
  if (text.empty()) bad_count(text, kExpected);
  if (text.front() == '-') bad_count(text, "must be positive");

  std::string_view digits = text;
  std::int64_t multiplier = 1;
  if (const std::int64_t m = suffix_multiplier(text.back()); m != 0) {
    multiplier = m;
    digits.remove_suffix(1);
  }

  std::int64_t whole = 0;
  std::int64_t fraction = 0;
  std::int64_t fraction_scale = 1;
  bool seen_digit = false;
  bool seen_point = false;
  for (const char c : digits) {
    if (c == '.') {
      if (seen_point) bad_count(text, kExpected);
      seen_point = true;
      continue;
    }
    if (!is_digit(c)) bad_count(text, kExpected);
    seen_digit = true;
    if (!seen_point) {
      if (!push_digit(whole, c)) bad_count(text, "too large");
    } else {
      if (fraction_scale >= 1'000'000'000) bad_count(text, "too many decimal places");
      fraction = fraction * 10 + (c - '0');
      fraction_scale *= 10;
    }
  }
  if (!seen_digit) bad_count(text, kExpected);
  if (whole > kMaxCount / multiplier) bad_count(text, "too large");

  const std::int64_t scaled_fraction = fraction * multiplier;
  if (scaled_fraction % fraction_scale != 0) bad_count(text, "is not a whole number");
  const std::int64_t count = whole * multiplier + scaled_fraction / fraction_scale;
  if (count <= 0) bad_count(text, "must be positive");
  return count;
}

std::array<std::int64_t, 3> parse_input_shape(std::string_view text) {
  constexpr std::int64_t kMaxDim = 1 << 16;
  const auto bad = [&](std::string_view why) -> Error {
    return Error("input shape '" + std::string(text) + "': " + std::string(why));
  };
  std::array<std::int64_t, 3> shape{};
  std::size_t index = 0;
  std::size_t pos = 0;
  while (true) {
    if (index == shape.size()) throw bad("expected HxWxC, e.g. 224x224x3");
    std::int64_t value = 0;
    const std::size_t start = pos;
    while (pos < text.size() && is_digit(text[pos])) {
      value = value * 10 + (text[pos] - '0');
      if (value > kMaxDim) throw bad("dimension above " + std::to_string(kMaxDim));
      ++pos;
    }
    if (pos == start) throw bad("expected HxWxC, e.g. 224x224x3");
    if (value == 0) throw bad("dimensions must be positive");
    shape[index++] = value;
    if (pos == text.size()) break;
    if (text[pos] != 'x' && text[pos] != 'X') throw bad("expected HxWxC, e.g. 224x224x3");
    ++pos;
  }
  if (index != shape.size()) throw bad("expected HxWxC, e.g. 224x224x3");
  return shape;
}

}  // namespace dpushard
