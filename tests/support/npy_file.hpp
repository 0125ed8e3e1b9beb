#pragma once
// .npy files for tests, spelled by hand as NumPy writes them (version 1.0, the header padded
// to 64 bytes), apart from core's writer: the reader is tested on bytes it did not make, and
// a test can write what the writer never would (a short array, an unsupported dtype).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/graph/tensor.hpp"

namespace dpushard::testing {

// A shape as a Python tuple, as NumPy writes it in the header: (1, 32, 32, 3), (5,), ().
std::string npy_shape(const std::vector<std::int64_t>& shape);

// The bytes of a .npy file: `descr` as NumPy spells it ("|i1", "<f4"), `shape` a Python
// tuple ("(1, 32, 32, 3)"), `data` as given (it need not fill the shape).
std::string npy_file(const std::string& descr, const std::string& shape, const std::string& data);

// An int8 .npy file holding `t` (its shape, C order).
void write_int8_npy(const std::filesystem::path& path, const QTensor& t);

}  // namespace dpushard::testing
