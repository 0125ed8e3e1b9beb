// Loggers on one shared stderr sink.

#include "dpushard/net/log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>

namespace dpushard::net {

std::shared_ptr<spdlog::logger> make_logger(const std::string& name) {
  static const auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>(name, sink);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l [%n] %v");
  const char* level = std::getenv("DPUSHARD_LOG");
  logger->set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::info);
  return logger;
}

}  // namespace dpushard::net
