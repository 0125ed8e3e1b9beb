#pragma once
// Structured (key=value) logs on stderr through spdlog; the level comes from the
// DPUSHARD_LOG environment variable (trace, debug, info, warn, error, off; default info).

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace dpushard::net {

// A logger named `name` writing to the shared stderr sink.
std::shared_ptr<spdlog::logger> make_logger(const std::string& name);

}  // namespace dpushard::net
