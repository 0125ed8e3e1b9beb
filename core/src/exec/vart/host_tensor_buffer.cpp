// Host memory behind a vart::TensorBuffer (host_tensor_buffer.hpp).

#include "host_tensor_buffer.hpp"

#include <xir/tensor/tensor.hpp>

namespace dpushard::vart_detail {

HostTensorBuffer::HostTensorBuffer(const xir::Tensor* tensor)
    : vart::TensorBuffer(tensor),
      shape_(tensor->get_shape()),
      bytes_(static_cast<std::size_t>(tensor->get_data_size()), 0) {}

std::pair<std::uint64_t, std::size_t> HostTensorBuffer::data(const std::vector<std::int32_t> idx) {
  std::size_t offset = 0;
  if (!idx.empty()) {
    if (idx.size() != shape_.size()) return {0, 0};
    std::size_t element = 0;
    for (std::size_t d = 0; d < shape_.size(); ++d) {
      if (idx[d] < 0 || idx[d] >= shape_[d]) return {0, 0};
      element = element * static_cast<std::size_t>(shape_[d]) + static_cast<std::size_t>(idx[d]);
    }
    // Bytes per element: the buffer holds get_data_size() bytes for the whole shape.
    std::size_t elements = 1;
    for (const auto dim : shape_) elements *= static_cast<std::size_t>(dim);
    offset = elements == 0 ? 0 : element * (bytes_.size() / elements);
  }
  return {reinterpret_cast<std::uint64_t>(bytes_.data() + offset), bytes_.size() - offset};
}

}  // namespace dpushard::vart_detail
