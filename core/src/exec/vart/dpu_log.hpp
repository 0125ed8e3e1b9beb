#pragma once
// The vart backend's structured log (key=value, stderr, the worker's format; the level from
// DPUSHARD_LOG as for the worker's own loggers, core/include/dpushard/net/log.hpp).

#include <spdlog/spdlog.h>

namespace dpushard::vart_detail {

spdlog::logger& dpu_log();  // named "vart"

}  // namespace dpushard::vart_detail
