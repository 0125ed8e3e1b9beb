#pragma once
// The DPU's op rules: for each XIR op type, the device the compiler puts it on and the limits
// beyond which it moves to the other one. They are the one source of the DPU limits: the
// shipped DPUCZDX8G file (targets/dpu/dpuczdx8g.yaml, compiled in) is the built-in compiler
// oracle of `dpushard split` (its `ops` and `unknown_ops`, plus boundary rules and micro-model
// outcomes), and the timing model's CPU placement derives its limits from the same rules
// (Target's kernel_min ... cpu_ops; docs/perf.md). KV260, ZCU102 and ZCU104 all carry
// DPUCZDX8G cores. Schema: docs/splitting.md.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpushard/perf/device.hpp"

namespace dpushard {

namespace yaml {
class Document;
class Map;
class Value;
}  // namespace yaml

// One op type's rule: its device, and limits whose violation sends it to the other device.
struct DpuOpRule {
  Device device = Device::Dpu;
  std::optional<std::pair<std::int64_t, std::int64_t>> kernel;  // each of kh, kw in range
  std::optional<std::pair<std::int64_t, std::int64_t>> stride;
  std::optional<std::pair<std::int64_t, std::int64_t>> out_channels;
  std::optional<std::int64_t> kernel_channel_budget;  // kw * kh * ceil(ic / 16)
  std::vector<std::int64_t> groups;  // allowed conv groups (empty: any); -1: depthwise
  bool square = false;               // kernel must be square
  std::vector<double> alphas;        // allowed leaky-relu slopes
  bool const_operand = false;        // a matmul runs on the DPU only as a conv (one const operand)
  std::string source;                // where the fact comes from
};

struct DpuRules {
  Device unknown_ops = Device::Cpu;                   // op types not listed
  std::map<std::string, DpuOpRule, std::less<>> ops;  // by XIR op type
};

// "DPU" or "CPU" at `value`, else an error there.
Device read_device(const yaml::Value& value);
// The `unknown_ops` and `ops` keys of an oracle file's top mapping.
DpuRules read_dpu_rules(const yaml::Map& top);

// The shipped DPUCZDX8G oracle file's text, and its rules.
std::string_view builtin_oracle_yaml();
const DpuRules& builtin_dpu_rules();

}  // namespace dpushard
