#pragma once
// How much more memory this process may take before its limit stops it: the address-space
// rlimit (`ulimit -v`, where an allocation past it fails) or the cgroup v2 memory.max of
// its cgroup (where the kernel's OOM killer ends the process). A worker checks a fragment
// against it before loading, so a board too small for a fragment refuses it in one line
// instead of being killed half-way (docs/cluster.md, "Exhaustion").

#include <cstdint>
#include <optional>
#include <string>

namespace dpushard::net {

struct MemoryHeadroom {
  std::uint64_t left_bytes = 0;   // the limit minus what the process uses now
  std::uint64_t limit_bytes = 0;  // the limit itself
  std::string limit;              // "RLIMIT_AS" or "cgroup memory.max"
};

// The tighter of the two limits, or nullopt when neither is set.
std::optional<MemoryHeadroom> memory_headroom();

// "12.3 MB".
std::string megabytes(std::uint64_t bytes);

}  // namespace dpushard::net
