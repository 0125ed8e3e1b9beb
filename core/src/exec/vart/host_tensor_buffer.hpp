#pragma once
// A vart::TensorBuffer over host memory it owns (location HOST_VIRT), for runners that do
// not hand out buffers of their own (runners that are not vart::RunnerExt). The DPU runner
// copies such buffers to and from device memory itself.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <vart/tensor_buffer.hpp>

namespace dpushard::vart_detail {

class HostTensorBuffer final : public vart::TensorBuffer {
 public:
  // Allocates get_data_size() bytes for `tensor` (dense, row-major over its shape).
  explicit HostTensorBuffer(const xir::Tensor* tensor);

  // The address of element `idx` (all zeros when empty) and the bytes from it to the end;
  // {0, 0} for an index outside the shape.
  std::pair<std::uint64_t, std::size_t> data(const std::vector<std::int32_t> idx = {}) override;

 private:
  std::vector<std::int32_t> shape_;
  std::vector<std::int8_t> bytes_;
};

}  // namespace dpushard::vart_detail
