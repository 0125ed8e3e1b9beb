#include "dpushard/base/npy.hpp"

#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/base/regular_file.hpp"

namespace dpushard {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

struct DtypeInfo {
  NpyArray::Type type;
  const char* descr;  // as NumPy writes it
  std::size_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {NpyArray::Type::Int8, "|i1", 1},    {NpyArray::Type::UInt8, "|u1", 1},
    {NpyArray::Type::Bool, "|b1", 1},    {NpyArray::Type::Int16, "<i2", 2},
    {NpyArray::Type::Int32, "<i4", 4},   {NpyArray::Type::Int64, "<i8", 8},
    {NpyArray::Type::Float32, "<f4", 4}, {NpyArray::Type::Float64, "<f8", 8},
};

const DtypeInfo& info_of(NpyArray::Type type) {
  for (const DtypeInfo& d : kDtypes)
    if (d.type == type) return d;
  throw Error("npy: unknown array type");
}

template <typename T>
void append_as_float(const std::string& bytes, std::vector<float>& out) {
  static_assert(std::endian::native == std::endian::little, ".npy data is little endian");
  const std::size_t n = bytes.size() / sizeof(T);
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    out.push_back(static_cast<float>(v));
  }
}

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
  std::string descr = entries["descr"];
  if (descr == "<i1" || descr == "<u1" || descr == "<b1") descr[0] = '|';  // no byte order
  const DtypeInfo* dtype = nullptr;
  for (const DtypeInfo& d : kDtypes)
    if (descr == d.descr) dtype = &d;
  if (dtype == nullptr)
    throw Error(origin + ": dtype '" + entries["descr"] +
                "' is not supported (int8/16/32/64, uint8, bool, float32/64, little endian)");
  array.type = dtype->type;
  std::size_t count = 1;
  for (std::int64_t dim : array.shape) {
    std::size_t next = 0;
    if (__builtin_mul_overflow(count, static_cast<std::size_t>(dim), &next) ||
        next > std::numeric_limits<std::size_t>::max() / dtype->size)
      throw Error(origin + ": shape " + entries["shape"] + " is too large");
    count = next;
  }
  const std::size_t data_start = header_start + header_length;
  if (bytes.size() - data_start != count * dtype->size)
    throw Error(origin + ": holds " + std::to_string(bytes.size() - data_start) +
                " data bytes, its shape needs " + std::to_string(count * dtype->size));
  array.data = bytes.substr(data_start);
  return array;
}

NpyArray read_npy(const std::filesystem::path& path) {
  return parse_npy(read_regular_file(path), path.string());
}

std::string npy_descr(NpyArray::Type type) { return info_of(type).descr; }
std::size_t npy_item_size(NpyArray::Type type) { return info_of(type).size; }

std::int64_t NpyArray::element_count() const {
  std::int64_t count = 1;
  for (std::int64_t dim : shape) count *= dim;
  return count;
}

std::vector<float> NpyArray::to_float() const {
  std::vector<float> out;
  switch (type) {
    case Type::Int8:
      append_as_float<std::int8_t>(data, out);
      break;
    case Type::UInt8:
    case Type::Bool:
      append_as_float<std::uint8_t>(data, out);
      break;
    case Type::Int16:
      append_as_float<std::int16_t>(data, out);
      break;
    case Type::Int32:
      append_as_float<std::int32_t>(data, out);
      break;
    case Type::Int64:
      append_as_float<std::int64_t>(data, out);
      break;
    case Type::Float32:
      append_as_float<float>(data, out);
      break;
    case Type::Float64:
      append_as_float<double>(data, out);
      break;
  }
  return out;
}

std::vector<std::int8_t> NpyArray::int8_values(const std::string& origin) const {
  if (type != Type::Int8)
    throw Error(origin + ": dtype '" + npy_descr(type) + "' is not int8 ('|i1')");
  std::vector<std::int8_t> values(data.size());
  if (!data.empty()) std::memcpy(values.data(), data.data(), data.size());
  return values;
}

std::string npy_bytes(const NpyArray& array) {
  if (static_cast<std::int64_t>(array.data.size()) !=
      array.element_count() * static_cast<std::int64_t>(npy_item_size(array.type)))
    throw Error("npy: the data does not fill the shape");
  std::string shape;  // as NumPy spells it: (), (3,), (2, 3)
  for (std::size_t i = 0; i < array.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(array.shape[i]);
  if (array.shape.size() == 1) shape += ',';
  std::string header = "{'descr': '" + npy_descr(array.type) +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // NumPy pads the header with spaces and a newline so the data starts 64-byte aligned.
  while ((kMagicSize + 4 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  if (header.size() > 0xFFFF) throw Error("npy: the header is too long for version 1.0");
  std::string bytes(kMagic, kMagicSize);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes += array.data;
  return bytes;
}

void write_npy(const std::filesystem::path& path, const NpyArray& array) {
  write_file_atomically(path, npy_bytes(array));
}

}  // namespace dpushard
