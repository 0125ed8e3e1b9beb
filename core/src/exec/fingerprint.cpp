// DPU fingerprints as text (dpushard/exec/backend.hpp). A file of its own: the plan reader uses
// them too, and the fuzz build compiles it without the rest of dpushard_exec.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"

namespace dpushard {

std::string fingerprint_text(std::uint64_t fingerprint) {
  if (fingerprint == 0) return "none";
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(fingerprint));
  return text;
}

std::uint64_t parse_fingerprint(std::string_view text, std::string_view what) {
  const std::string s(text);
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const std::string digits = hex ? s.substr(2) : s;
  const bool ok = !digits.empty() && digits.size() <= (hex ? 16u : 20u) &&
                  std::all_of(digits.begin(), digits.end(), [hex](char c) {
                    return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                               : std::isdigit(static_cast<unsigned char>(c)) != 0;
                  });
  if (ok) {
    errno = 0;
    const unsigned long long value = std::strtoull(digits.c_str(), nullptr, hex ? 16 : 10);
    if (errno == 0) return value;
  }
  throw Error(std::string(what) + ": '" + s +
              "' is not a DPU fingerprint (0x followed by hex digits)");
}

}  // namespace dpushard
