#pragma once
// One exception type for every user-facing failure. Its message is a single line that
// names the file, field or op at fault; the command line prints it and exits non-zero.

#include <stdexcept>
#include <string>

namespace dpushard {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dpushard
