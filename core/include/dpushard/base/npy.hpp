#pragma once
// NumPy .npy files (format versions 1.0, 2.0 and 3.0): the one reader and writer, used by
// `exec`/`run --input` (int8 as is, float32 quantized), `import --calib` and the tests.
// The reader is strict: C order, little endian, a header dict with exactly `descr`,
// `fortran_order` and `shape`, data that fills the shape exactly. Anything else is one
// dpushard::Error naming the file.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dpushard {

struct NpyArray {
  enum class Type { Int8, UInt8, Bool, Int16, Int32, Int64, Float32, Float64 };
  Type type = Type::Int8;
  std::vector<std::int64_t> shape;
  std::string data;  // the values' bytes, little endian, C order

  std::int64_t element_count() const;
  // The values as float (every type converts).
  std::vector<float> to_float() const;
  // The values of an Int8 array; any other type throws naming `origin`.
  std::vector<std::int8_t> int8_values(const std::string& origin) const;
};

// The dtype as NumPy writes it ("|i1", "<f4", ...).
std::string npy_descr(NpyArray::Type type);
std::size_t npy_item_size(NpyArray::Type type);

NpyArray parse_npy(const std::string& bytes, const std::string& origin);
NpyArray read_npy(const std::filesystem::path& path);

// The file's bytes (version 1.0, header padded to 64 bytes as NumPy does); write_npy writes
// them atomically. The data must fill the shape.
std::string npy_bytes(const NpyArray& array);
void write_npy(const std::filesystem::path& path, const NpyArray& array);

}  // namespace dpushard
