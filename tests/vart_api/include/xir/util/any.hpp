// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx XIR's xir/util/any.hpp,
// reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <any>

namespace xir {
using any = std::any;
namespace stdx = ::std;
}  // namespace xir
