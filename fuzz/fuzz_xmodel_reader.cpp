// libFuzzer target: the xmodel reader (parse_xmodel) on arbitrary bytes. Bad input must end
// in dpushard::Error; anything else (a crash, a sanitizer report, another exception) is a bug.

#include <cstdint>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/xmodel/xmodel.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)dpushard::parse_xmodel(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const dpushard::Error&) {
  }
  return 0;
}
