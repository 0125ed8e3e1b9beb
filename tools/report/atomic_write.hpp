#pragma once
// Writing a file so that a reader never sees half of it: a temporary file in the same
// folder, flushed and closed, then renamed over the target.

#include <filesystem>
#include <string>

namespace dpushard::report {

// Throws dpushard::Error naming the file when it cannot be written.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);

}  // namespace dpushard::report
