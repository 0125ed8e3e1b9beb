#include "dpushard/base/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "dpushard/base/error.hpp"

namespace dpushard {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Unique within the process (the counter) and across processes (the pid).
std::filesystem::path temporary_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  return path.parent_path() / ("." + path.filename().string() + ".tmp." +
                               std::to_string(::getpid()) + "." + std::to_string(counter++));
}

// Makes the rename itself durable; a failure here cannot undo the write, so it is ignored.
void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.filename().empty()) throw Error(path_.string() + ": not a file path");
  temp_ = temporary_for(path_);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error(path_.string() + ": cannot create " + temp_.string() + ": " + errno_text());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(path_.string() + ": cannot write: " + errno_text());
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void AtomicFile::commit() {
  // The data must be on disk before the rename makes it visible under the final name.
  if (::fsync(fd_) != 0) throw Error(path_.string() + ": cannot sync: " + errno_text());
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw Error(path_.string() + ": cannot close: " + errno_text());
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    throw Error(path_.string() + ": cannot rename " + temp_.string() +
                " into place: " + errno_text());
  temp_.clear();
  sync_directory(path_.parent_path());
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace dpushard
