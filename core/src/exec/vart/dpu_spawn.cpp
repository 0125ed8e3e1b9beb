// posix_spawn of this process's own executable (dpu_spawn.hpp).

#include "dpu_spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "dpushard/base/error.hpp"

extern char** environ;

namespace dpushard::vart_detail {
namespace {

constexpr const char* kSelf = "/proc/self/exe";
constexpr int kFirstFd = 3;

// Closes what it holds when it goes: the descriptors and the spawn objects.
struct SpawnState {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attributes{};
  bool have_actions = false, have_attributes = false;
  std::vector<int> copies;
  ~SpawnState() {
    for (const int fd : copies) ::close(fd);
    if (have_actions) posix_spawn_file_actions_destroy(&actions);
    if (have_attributes) posix_spawnattr_destroy(&attributes);
  }
};

}  // namespace

std::string own_executable() {
  std::error_code error;
  const auto path = std::filesystem::read_symlink(kSelf, error);
  return error ? std::string("dpushard") : path.string();
}

pid_t spawn_own_image(const std::vector<std::string>& args, const std::vector<int>& fds,
                      const std::string& who) {
  const auto fail = [&](const char* what, int code) {
    throw Error(who + ": cannot start the DPU process (" + what + "): " + std::strerror(code));
  };
  SpawnState state;
  // Copies above every target (3 .. 3+n-1), close-on-exec: each dup2 below then moves a
  // descriptor to a different number, which clears close-on-exec on the target only, and
  // never overwrites a source still to be moved.
  const int above = kFirstFd + static_cast<int>(fds.size());
  for (const int fd : fds) {
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, above);
    if (copy < 0) fail("dup", errno);
    state.copies.push_back(copy);
  }
  if (const int e = posix_spawn_file_actions_init(&state.actions); e != 0) fail("actions", e);
  state.have_actions = true;
  for (std::size_t i = 0; i < state.copies.size(); ++i)
    if (const int e = posix_spawn_file_actions_adddup2(&state.actions, state.copies[i],
                                                       kFirstFd + static_cast<int>(i));
        e != 0)
      fail("dup2", e);
  if (const int e = posix_spawnattr_init(&state.attributes); e != 0) fail("attributes", e);
  state.have_attributes = true;
  // The worker may block signals for a signal thread or ignore SIGPIPE: the child starts clean.
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&state.attributes, &all);
  posix_spawnattr_setsigmask(&state.attributes, &none);
  posix_spawnattr_setflags(&state.attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  const std::string program = own_executable();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (const int e =
          ::posix_spawn(&pid, kSelf, &state.actions, &state.attributes, argv.data(), environ);
      e != 0)
    fail(kSelf, e);
  return pid;
}

}  // namespace dpushard::vart_detail
