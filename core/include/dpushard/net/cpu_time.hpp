#pragma once
// CPU time consumed on this machine, to show that the runtime's own work (receiving,
// sending, scheduling) does not leak into the modeled time of a sim run.

#include <cstdint>

namespace dpushard::net {

std::uint64_t process_cpu_ns();  // user + system time of every thread of this process
std::uint64_t thread_cpu_ns();   // of the calling thread

}  // namespace dpushard::net
