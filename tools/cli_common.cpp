#include "cli_common.hpp"

#include <cstdio>
#include <iostream>

namespace dpushard::cli {

void print_json(const nlohmann::json& object) { std::cout << object.dump(2) << std::endl; }

std::string human_count(long long value) {
  const char* suffix[] = {"", "K", "M", "G", "T"};
  double v = static_cast<double>(value);
  int i = 0;
  while (v >= 1000.0 && i < 4) {
    v /= 1000.0;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f%s" : "%.1f%s", v, suffix[i]);
  return buf;
}

}  // namespace dpushard::cli
