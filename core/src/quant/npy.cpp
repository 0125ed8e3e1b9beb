// NumPy .npy files (format versions 1 to 3), read as float, written as float32.
#include <unistd.h>
#include <cstring>
#include <fstream>
#include <sstream>

#include "dpushard/atomic_file.hpp"
#include "dpushard/error.hpp"
#include "dpushard/quantize.hpp"

namespace dpushard {
namespace {

// The value of `key` in the header dict ("{'descr': '<f4', 'fortran_order': False, ...}").
std::string header_field(const std::string& header, const std::string& key,
                         const std::string& who) {
  const auto k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(who + ": .npy header has no '" + key + "'");
  auto colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(who + ": malformed .npy header");
  auto start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) throw Error(who + ": malformed .npy header");
  char open = header[start];
  std::size_t end;
  if (open == '\'') {
    end = header.find('\'', start + 1);
    return header.substr(start + 1, end - start - 1);
  }
  if (open == '(') {
    end = header.find(')', start);
    return header.substr(start + 1, end - start - 1);
  }
  end = header.find_first_of(",}", start);
  return header.substr(start, end - start);
}

template <typename T>
void convert(const std::string& raw, std::vector<float>& out) {
  out.resize(raw.size() / sizeof(T));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<float>(v);
  }
}

}  // namespace

FloatTensor read_npy(const std::filesystem::path& path) {
  const std::string who = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(who + ": cannot open");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw Error(who + ": not a .npy file");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) throw Error(who + ": truncated header");
    header_len = static_cast<std::uint32_t>(b[0] | (b[1] << 8));
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) throw Error(who + ": truncated header");
    header_len = static_cast<std::uint32_t>(b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24));
  } else {
    throw Error(who + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_len > (1u << 20)) throw Error(who + ": .npy header too large");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) throw Error(who + ": truncated header");
  const std::string descr = header_field(header, "descr", who);
  if (header_field(header, "fortran_order", who).find("True") != std::string::npos)
    throw Error(who + ": Fortran-order arrays are not supported");
  FloatTensor t;
  std::stringstream dims(header_field(header, "shape", who));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      const long long d = std::stoll(item);
      if (d < 0) throw Error(who + ": negative dimension");
      t.shape.push_back(d);
    } catch (const std::logic_error&) {
      throw Error(who + ": bad shape in .npy header");
    }
  }
  std::int64_t count = 1;
  for (auto d : t.shape) {
    if (d != 0 && count > (std::int64_t{1} << 40) / d) throw Error(who + ": array too large");
    count *= d;
  }
  static const std::map<std::string, std::size_t> kSizes = {{"<f4", 4}, {"<f8", 8}, {"|i1", 1},
                                                            {"|u1", 1}, {"|b1", 1}, {"<i2", 2},
                                                            {"<i4", 4}, {"<i8", 8}};
  auto size_it = kSizes.find(descr);
  if (size_it == kSizes.end()) throw Error(who + ": unsupported dtype '" + descr + "'");
  std::string raw(static_cast<std::size_t>(count) * size_it->second, '\0');
  if (!in.read(raw.data(), static_cast<std::streamsize>(raw.size())))
    throw Error(who + ": truncated data (" + std::to_string(count) + " values expected)");
  if (descr == "<f4")
    convert<float>(raw, t.data);
  else if (descr == "<f8")
    convert<double>(raw, t.data);
  else if (descr == "|i1")
    convert<std::int8_t>(raw, t.data);
  else if (descr == "|u1" || descr == "|b1")
    convert<std::uint8_t>(raw, t.data);
  else if (descr == "<i2")
    convert<std::int16_t>(raw, t.data);
  else if (descr == "<i4")
    convert<std::int32_t>(raw, t.data);
  else
    convert<std::int64_t>(raw, t.data);
  return t;
}

void write_npy(const std::filesystem::path& path, const FloatTensor& tensor) {
  std::string shape;
  for (auto d : tensor.shape) shape += std::to_string(d) + ", ";
  if (tensor.shape.size() > 1) shape.resize(shape.size() - 1);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>((header.size() >> 8) & 0xff);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(tensor.data.data()),
               tensor.data.size() * sizeof(float));
  write_file_atomically(path, bytes);
}

}  // namespace dpushard
