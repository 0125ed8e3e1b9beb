#pragma once
// Where an op runs: on the DPU or on the board's CPU. One enum for the timing model (perf,
// OpTiming::engine) and the compiler oracle (split, Placement::device).

#include <string_view>

namespace dpushard {

enum class Device { Dpu, Cpu };

constexpr std::string_view device_name(Device device) {
  return device == Device::Dpu ? "DPU" : "CPU";
}

}  // namespace dpushard
