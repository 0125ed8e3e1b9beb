#pragma once
// The one way dpushard opens a file it reads whole or streams: a folder, a FIFO, a device
// or a socket where a file is expected is refused with one line naming the path (a FIFO
// is opened without blocking, so a missing writer cannot hang the reader).

#include <cstdint>
#include <filesystem>
#include <string>

namespace dpushard {

class RegularFile {
 public:
  // Opens `path` read-only. `label` names it in errors (default: the path), e.g.
  // "token file 'x'"; throws dpushard::Error "<label>: is a directory, not a file" etc.
  explicit RegularFile(const std::filesystem::path& path, std::string label = "");
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  const std::string& label() const { return label_; }
  // The whole file; a read error or a file that shrinks meanwhile throws, naming it.
  std::string read_all() const;

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string label_;
};

// RegularFile(path, label).read_all().
std::string read_regular_file(const std::filesystem::path& path, const std::string& label = "");

}  // namespace dpushard
