// tensor_buffer.cpp (VART's runner library) can create a TensorBufferUnownedDevice: a buffer
// over physical DPU addresses, which only exists on a board. Its source needs VART util
// headers that are not shared here, and no host test can use one, so this file defines the
// class's members as a clear failure instead (dpushard's code, not Xilinx's).
#include <glog/logging.h>

#include <vart/tensor_buffer_unowned_device.hpp>
#include <xir/tensor/tensor.hpp>

namespace vart {

namespace {
[[noreturn]] void absent() {
  LOG(FATAL) << "TensorBufferUnownedDevice needs a DPU's physical memory: not in the host build";
  std::abort();
}
}  // namespace

TensorBufferUnownedDevice::TensorBufferUnownedDevice(const xir::Tensor* tensor, uint64_t*, size_t)
    : TensorBuffer(tensor) {
  absent();
}
TensorBuffer::location_t TensorBufferUnownedDevice::get_location() const { absent(); }
std::pair<uint64_t, size_t> TensorBufferUnownedDevice::data_phy(const std::vector<std::int32_t>) {
  absent();
}
std::pair<std::uint64_t, std::size_t> TensorBufferUnownedDevice::data(
    const std::vector<std::int32_t>) {
  absent();
}

}  // namespace vart
