// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx XIR's
// xir/util/data_type.hpp, reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <cstdint>
#include <string>

namespace xir {

struct DataType {
  enum Type { INT, UINT, XINT, XUINT, FLOAT, BFLOAT, UNKNOWN };

  DataType();
  DataType(const std::string& type);
  DataType(const Type& type, const std::int32_t& bit_width);

  const bool valid() const;
  const std::string to_string() const;

  Type type;
  std::int32_t bit_width;
};

}  // namespace xir
