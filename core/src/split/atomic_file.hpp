#pragma once
// Writing files so that a reader never sees half of one: a temporary file in the same
// folder, flushed, then renamed over the target.

#include <filesystem>
#include <string>

namespace dpushard::split {

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);

}  // namespace dpushard::split
