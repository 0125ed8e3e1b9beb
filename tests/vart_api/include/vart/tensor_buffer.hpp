// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx VART's
// vart/tensor_buffer.hpp, reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace xir {
class Tensor;
}  // namespace xir

namespace vart {

class TensorBuffer {
 public:
  explicit TensorBuffer(const xir::Tensor* tensor);
  virtual ~TensorBuffer() = default;

  enum class location_t {
    HOST_VIRT = 0,
    HOST_PHY = 1,
    DEVICE_0 = 2,
    DEVICE_1 = 3,
    DEVICE_2 = 4,
    DEVICE_3 = 5,
    DEVICE_4 = 6,
    DEVICE_5 = 7,
    DEVICE_6 = 8,
    DEVICE_7 = 9
  };

  virtual std::pair<std::uint64_t, std::size_t> data(const std::vector<std::int32_t> idx = {}) = 0;
  virtual location_t get_location() const { return location_t::HOST_VIRT; }
  virtual void sync_for_read(uint64_t offset, size_t size) {}
  virtual void sync_for_write(uint64_t offset, size_t size) {}

  const xir::Tensor* get_tensor() const;

 protected:
  const xir::Tensor* tensor_;
};

}  // namespace vart
