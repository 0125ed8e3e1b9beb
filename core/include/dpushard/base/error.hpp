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

// The accelerator failed one frame: its process died, it exceeded its time budget, or the
// runtime reported a failure; the backend has restarted it and can take the next frame. A
// worker reports it with its own error code (device_failed), so an operator can tell a sick
// board from a bad model.
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace dpushard
