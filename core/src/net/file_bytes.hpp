#pragma once
// Whole-file reads for small and large files alike.

#include <filesystem>
#include <optional>
#include <string>

namespace dpushard::net {

// The bytes of `path`, or nullopt when it cannot be opened or read.
std::optional<std::string> read_file_bytes(const std::filesystem::path& path);

}  // namespace dpushard::net
