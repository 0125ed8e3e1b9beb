#include "dpushard/net/cpu_time.hpp"

#include <sys/resource.h>
#include <time.h>

namespace dpushard::net {

std::uint64_t process_cpu_ns() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  auto ns = [](const timeval& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(t.tv_usec) * 1'000u;
  };
  return ns(usage.ru_utime) + ns(usage.ru_stime);
}

std::uint64_t thread_cpu_ns() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(t.tv_nsec);
}

}  // namespace dpushard::net
