#include "memory_headroom.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace dpushard::net {
namespace {

std::optional<std::uint64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The process's address space now (VmSize): what RLIMIT_AS counts.
std::uint64_t address_space_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t pages = 0;
  in >> pages;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

std::optional<MemoryHeadroom> from_rlimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  const std::uint64_t used = address_space_bytes();
  return MemoryHeadroom{limit.rlim_cur > used ? limit.rlim_cur - used : 0, limit.rlim_cur,
                        "RLIMIT_AS"};
}

// cgroup v2: "0::/path" in /proc/self/cgroup names the group under /sys/fs/cgroup.
std::optional<MemoryHeadroom> from_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return std::nullopt;
  const std::string dir = "/sys/fs/cgroup" + (path == "/" ? std::string() : path);
  const auto max = read_number(dir + "/memory.max");
  const auto current = read_number(dir + "/memory.current");
  if (!max || !current) return std::nullopt;
  return MemoryHeadroom{*max > *current ? *max - *current : 0, *max, "cgroup memory.max"};
}

}  // namespace

std::optional<MemoryHeadroom> memory_headroom() {
  auto a = from_rlimit();
  auto b = from_cgroup();
  if (a && b) return a->left_bytes <= b->left_bytes ? a : b;
  return a ? a : b;
}

std::string megabytes(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

}  // namespace dpushard::net
