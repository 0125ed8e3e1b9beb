#include "atomic_file.hpp"

#include <fstream>
#include <system_error>

#include <unistd.h>

#include "dpushard/error.hpp"

namespace dpushard::split {

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(path.string() + ": cannot create folder: " + ec.message());
  const auto tmp = dir / ("." + path.filename().string() + ".tmp" + std::to_string(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw Error(path.string() + ": cannot write");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(path.string() + ": cannot rename into place");
  }
}

}  // namespace dpushard::split
