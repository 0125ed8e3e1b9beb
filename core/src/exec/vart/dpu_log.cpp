// The vart backend's logger (dpu_log.hpp).

#include "dpu_log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <memory>

namespace dpushard::vart_detail {

spdlog::logger& dpu_log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto made =
        std::make_shared<spdlog::logger>("vart", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l [%n] %v");
    const char* level = std::getenv("DPUSHARD_LOG");
    made->set_level(level != nullptr ? spdlog::level::from_str(level) : spdlog::level::info);
    return made;
  }();
  return *logger;
}

}  // namespace dpushard::vart_detail
