#pragma once
// A full disk on demand: a size-limited tmpfs mounted on a folder of the test's own and
// unmounted when the object goes. Mounting needs root (or CAP_SYS_ADMIN); where it is not
// permitted, mounted() is false and why() says so, for the test's one-line skip.

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace dpushard::testing {

class SmallDisk {
 public:
  SmallDisk(std::filesystem::path at, std::size_t bytes) : at_(std::move(at)) {
    std::filesystem::create_directories(at_);
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", at_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0)
      mounted_ = true;
    else
      why_ = "cannot mount a " + std::to_string(bytes) + "-byte tmpfs on " + at_.string() + ": " +
             std::strerror(errno) + " (needs root)";
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(at_.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  const std::filesystem::path& path() const { return at_; }

  // Fills what is left with one file, so the next write fails with ENOSPC.
  void fill() const {
    std::ofstream out(at_ / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (out.write(block.data(), static_cast<std::streamsize>(block.size()))) {
    }
  }

 private:
  std::filesystem::path at_;
  bool mounted_ = false;
  std::string why_;
};

}  // namespace dpushard::testing
