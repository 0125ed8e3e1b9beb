#pragma once
// Files that readers see whole or not at all: every file dpushard writes (xmodels, plans,
// reports, oracles, .npy outputs, port files) goes through here. The bytes go to a unique
// temporary file beside the target (`.NAME.tmp.PID.N`, created with O_EXCL), are synced,
// and the temporary is renamed over the target, then the folder is synced. On any failure
// the temporary is removed, the target is left as it was, and dpushard::Error says
// "PATH: what failed".

#include <filesystem>
#include <string>
#include <string_view>

namespace dpushard {

// A file being written atomically, for writers that stream (the xmodel writer): write to
// fd(), then commit(). Destroyed without commit(), the temporary file is removed.
class AtomicFile {
 public:
  // Creates the temporary file; the target's folder must exist.
  explicit AtomicFile(std::filesystem::path path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  // Writes all of `bytes` to the temporary file; throws on a short write.
  void write(std::string_view bytes);
  // Syncs, closes and renames the temporary file over the target.
  void commit();

 private:
  std::filesystem::path path_;
  std::filesystem::path temp_;
  int fd_ = -1;
};

// Replaces `path` with `bytes` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace dpushard
