#include "npy.hpp"

#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>

#include "dpushard/error.hpp"
#include "dpushard/regular_file.hpp"

namespace dpushard::cli {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 32, 32, 3), }
// into its three entries; every other key or syntax is an error.
class HeaderParser {
 public:
  HeaderParser(std::string text, std::string origin)
      : text_(std::move(text)), origin_(std::move(origin)) {}

  std::map<std::string, std::string> parse() {
    std::map<std::string, std::string> entries;
    expect('{');
    while (true) {
      skip_spaces();
      if (peek() == '}') break;
      const std::string key = quoted();
      expect(':');
      skip_spaces();
      std::string value;
      if (peek() == '\'') {
        value = quoted();
      } else if (peek() == '(') {
        value = tuple();
      } else {
        value = word();
      }
      if (!entries.emplace(key, value).second) fail("key '" + key + "' appears twice");
      skip_spaces();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_spaces();
      if (peek() != '}') fail("expected ',' or '}' in the header");
    }
    ++pos_;
    skip_spaces();
    if (pos_ != text_.size()) fail("trailing characters after the header dict");
    return entries;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(origin_ + ": bad .npy header: " + what);
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_spaces();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string quoted() {
    skip_spaces();
    if (peek() != '\'') fail("expected a quoted string");
    const std::size_t end = text_.find('\'', pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string s = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return s;
  }
  std::string word() {
    const std::size_t start = pos_;
    while (std::isalpha(static_cast<unsigned char>(peek()))) ++pos_;
    if (pos_ == start) fail("expected a value");
    return text_.substr(start, pos_ - start);
  }
  std::string tuple() {
    const std::size_t end = text_.find(')', pos_);
    if (end == std::string::npos) fail("unterminated shape tuple");
    std::string s = text_.substr(pos_, end - pos_ + 1);
    pos_ = end + 1;
    return s;
  }

  std::string text_;
  std::string origin_;
  std::size_t pos_ = 0;
};

// "(1, 32, 32, 3)", "(10,)", "()" -> dimensions.
std::vector<std::int64_t> parse_shape(const std::string& tuple, const HeaderParser& parser) {
  std::vector<std::int64_t> shape;
  std::size_t i = 1;
  const std::size_t end = tuple.size() - 1;  // the ')'
  while (i < end) {
    while (i < end && tuple[i] == ' ') ++i;
    if (i == end) break;
    std::int64_t dim = 0;
    const std::size_t start = i;
    while (i < end && std::isdigit(static_cast<unsigned char>(tuple[i]))) {
      if (dim > (std::int64_t{1} << 40)) parser.fail("shape " + tuple + " is too large");
      dim = dim * 10 + (tuple[i] - '0');
      ++i;
    }
    if (i == start) parser.fail("shape " + tuple + " is not a tuple of integers");
    shape.push_back(dim);
    while (i < end && tuple[i] == ' ') ++i;
    if (i < end && tuple[i] != ',') parser.fail("shape " + tuple + " is not a tuple of integers");
    ++i;
  }
  return shape;
}

std::uint32_t little_endian(const std::string& bytes, std::size_t at, std::size_t width) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i)
    value |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return value;
}

}  // namespace

NpyArray parse_npy(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    throw Error(origin + ": not a .npy file (bad magic)");
  const auto major = static_cast<unsigned char>(bytes[kMagicSize]);
  if (major < 1 || major > 3)
    throw Error(origin + ": unsupported .npy format version " + std::to_string(major));
  const std::size_t length_width = major == 1 ? 2 : 4;
  const std::size_t header_start = kMagicSize + 2 + length_width;
  if (bytes.size() < header_start) throw Error(origin + ": truncated .npy header");
  const std::size_t header_length = little_endian(bytes, kMagicSize + 2, length_width);
  if (bytes.size() < header_start + header_length) throw Error(origin + ": truncated .npy header");

  HeaderParser parser(bytes.substr(header_start, header_length), origin);
  auto entries = parser.parse();
  if (entries.size() != 3 || !entries.contains("descr") || !entries.contains("fortran_order") ||
      !entries.contains("shape"))
    parser.fail("expected exactly the keys descr, fortran_order and shape");
  if (entries["fortran_order"] != "False")
    throw Error(origin + ": Fortran-order arrays are not supported (save in C order)");

  NpyArray array;
  array.shape = parse_shape(entries["shape"], parser);
  std::size_t item_size = 1;
  const std::string& descr = entries["descr"];
  if (descr == "|i1" || descr == "<i1") {
    array.type = NpyArray::Type::Int8;
  } else if (descr == "<f4") {
    array.type = NpyArray::Type::Float32;
    item_size = 4;
  } else {
    throw Error(origin + ": dtype '" + descr + "' is not supported (expected |i1 or <f4)");
  }
  std::size_t count = 1;
  for (std::int64_t dim : array.shape) {
    std::size_t next = 0;
    if (__builtin_mul_overflow(count, static_cast<std::size_t>(dim), &next) ||
        next > std::numeric_limits<std::size_t>::max() / item_size)
      throw Error(origin + ": shape " + entries["shape"] + " is too large");
    count = next;
  }
  const std::size_t data_start = header_start + header_length;
  if (bytes.size() - data_start != count * item_size)
    throw Error(origin + ": holds " + std::to_string(bytes.size() - data_start) +
                " data bytes, its shape needs " + std::to_string(count * item_size));
  // A zero in the shape is a valid empty array; memcpy must not see its null data().
  if (array.type == NpyArray::Type::Int8) {
    array.int8.resize(count);
    if (count != 0) std::memcpy(array.int8.data(), bytes.data() + data_start, count);
  } else {
    static_assert(std::endian::native == std::endian::little, "float32 .npy needs little endian");
    array.float32.resize(count);
    if (count != 0) std::memcpy(array.float32.data(), bytes.data() + data_start, count * 4);
  }
  return array;
}

NpyArray read_npy(const std::filesystem::path& path) {
  return parse_npy(read_regular_file(path), path.string());
}

}  // namespace dpushard::cli
