#include "atomic_write.hpp"

#include <unistd.h>

#include <fstream>

#include "dpushard/error.hpp"

namespace dpushard::report {

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  auto temp = path;
  temp += ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(path.string() + ": cannot write (" + temp.string() + ")");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      throw Error(path.string() + ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw Error(path.string() + ": cannot replace: " + ec.message());
  }
}

}  // namespace dpushard::report
