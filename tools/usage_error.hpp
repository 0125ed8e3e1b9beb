#pragma once
// Exit codes and the usage error of the command line.

#include "dpushard/base/error.hpp"

namespace dpushard::cli {

// A command line that asks for something impossible (options that need each other, a mode
// left out): reported like CLI11's own parse errors, exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Exit codes: 0 success, 1 a failure (bad input file, failed run), 2 a usage error.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
// A run stopped by SIGINT or SIGTERM (128 + SIGINT, as a shell reports it).
inline constexpr int kExitInterrupted = 130;

}  // namespace dpushard::cli
