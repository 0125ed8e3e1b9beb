#pragma once
// A small, strict reader of NumPy .npy files (format versions 1.0, 2.0 and 3.0), for the
// int8 and float32 arrays `dpushard exec --input` takes. Anything else is a one-line error
// naming the file.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dpushard::cli {

struct NpyArray {
  enum class Type { Int8, Float32 };
  Type type = Type::Int8;
  std::vector<std::int64_t> shape;
  std::vector<std::int8_t> int8;  // when type == Int8
  std::vector<float> float32;     // when type == Float32
};

// Accepts dtype '|i1' (or '<i1') and '<f4', C order only; the data must fill the shape
// exactly. Throws dpushard::Error naming `path` and the problem.
NpyArray read_npy(const std::filesystem::path& path);
NpyArray parse_npy(const std::string& bytes, const std::string& origin);

}  // namespace dpushard::cli
