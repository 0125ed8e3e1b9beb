#include "support/npy_file.hpp"

#include <fstream>
#include <stdexcept>

namespace dpushard::testing {

std::string npy_shape(const std::vector<std::int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6), version (2) and header length (2), then the header ending in a newline.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + data;
}

void write_int8_npy(const std::filesystem::path& path, const QTensor& t) {
  const std::string data(t.data.begin(), t.data.end());
  std::ofstream out(path, std::ios::binary);
  out << npy_file("|i1", npy_shape(t.shape), data);
  if (!out.flush()) throw std::runtime_error(path.string() + ": cannot write");
}

}  // namespace dpushard::testing
