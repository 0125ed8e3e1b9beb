#pragma once
// The target YAML files compiled into the library (generated from targets/*.yaml by CMake),
// so the binary predicts without a source tree.

#include <span>
#include <string_view>

namespace dpushard::perf {

struct BuiltinTarget {
  std::string_view name;  // what --target accepts
  std::string_view yaml;  // the file's text
};

std::span<const BuiltinTarget> builtin_targets();
// The DPUCZDX8G oracle file (targets/dpu/dpuczdx8g.yaml): the DPU's op rules.
std::string_view builtin_oracle_text();

}  // namespace dpushard::perf
