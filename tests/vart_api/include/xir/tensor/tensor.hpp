// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx XIR's
// xir/tensor/tensor.hpp, reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "xir/util/any.hpp"
#include "xir/util/data_type.hpp"

namespace xir {

class Tensor {
 public:
  virtual const std::string get_name() const = 0;
  virtual const std::vector<std::int32_t> get_shape() const = 0;
  virtual const std::int32_t get_element_num() const = 0;
  virtual const DataType& get_data_type() const = 0;
  virtual const std::int32_t get_data_size() const = 0;
  virtual const bool has_attr(const std::string& key) const = 0;
  virtual const xir::any get_attr(const std::string& key) const = 0;

  template <typename Dtype>
  const Dtype get_attr(const std::string& key) const {
    return xir::stdx::any_cast<Dtype>(this->get_attr(key));
  }

  virtual ~Tensor() = default;
};

}  // namespace xir
