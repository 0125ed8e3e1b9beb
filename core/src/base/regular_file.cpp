// Opening files that must be regular files: checked on the open descriptor (no race
// between a check and the open), a FIFO opened without blocking.

#include "dpushard/base/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dpushard/base/error.hpp"

namespace dpushard {

RegularFile::RegularFile(const std::filesystem::path& path, std::string label)
    : label_(label.empty() ? path.string() : std::move(label)) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) {
    const int error = errno;
    if (error == ENOENT) throw Error(label_ + ": no such file");
    throw Error(label_ + ": cannot open: " + std::strerror(error));
  }
  struct stat info {};
  std::string refused;
  if (::fstat(fd_, &info) != 0)
    refused = std::string("cannot stat: ") + std::strerror(errno);
  else if (S_ISDIR(info.st_mode))
    refused = "is a directory, not a file";
  else if (!S_ISREG(info.st_mode))
    refused = S_ISFIFO(info.st_mode) ? "is a FIFO, not a regular file"
                                     : "is not a regular file (a device or socket)";
  if (!refused.empty()) {
    ::close(fd_);
    fd_ = -1;
    throw Error(label_ + ": " + refused);
  }
  // Back to blocking reads (O_NONBLOCK only kept a FIFO's open from waiting).
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<std::uint64_t>(info.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string RegularFile::read_all() const {
  std::string bytes(size_, '\0');
  std::uint64_t done = 0;
  while (done < size_) {
    const ssize_t n = ::pread(fd_, bytes.data() + done, size_ - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(label_ + ": read error: " + std::strerror(errno));
    if (n == 0) throw Error(label_ + ": the file shrank while it was read");
    done += static_cast<std::uint64_t>(n);
  }
  return bytes;
}

std::string read_regular_file(const std::filesystem::path& path, const std::string& label) {
  return RegularFile(path, label).read_all();
}

}  // namespace dpushard
