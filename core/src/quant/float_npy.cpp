// Float tensors as .npy files, through the one .npy reader and writer (dpushard/base/npy.hpp).
#include <cstring>

#include "dpushard/base/npy.hpp"
#include "dpushard/quant/quantize.hpp"

namespace dpushard {

FloatTensor read_float_npy(const std::filesystem::path& path) {
  const NpyArray array = read_npy(path);
  return FloatTensor{array.shape, array.to_float()};
}

void write_float_npy(const std::filesystem::path& path, const FloatTensor& tensor) {
  NpyArray array;
  array.type = NpyArray::Type::Float32;
  array.shape = tensor.shape;
  array.data.resize(tensor.data.size() * sizeof(float));
  if (!tensor.data.empty()) std::memcpy(array.data.data(), tensor.data.data(), array.data.size());
  write_npy(path, array);
}

}  // namespace dpushard
