#pragma once
// Starts a program image of our own: this process's executable (/proc/self/exe, the very
// file the process runs, even if a newer one has replaced it on disk since), with
// posix_spawn, not fork. A fork of a multi-threaded process copies only the calling thread
// and every lock as it was at that moment: a child that then initialises protobuf, glog or
// XRT can hang on a lock some other thread held. A fresh image has no such state.

#include <sys/types.h>

#include <string>
#include <vector>

namespace dpushard::vart_detail {

// Runs /proc/self/exe with `args` (argv[1] onwards; argv[0] is the executable's path) and
// `fds` placed at descriptors 3, 4, 5, ... in that order; every other descriptor of this
// process stays out (they are close-on-exec, and the child closes what is not). Signal
// dispositions are the defaults and no signal is blocked, whatever this process does. The
// child inherits the environment. Throws dpushard::Error naming `who` when it cannot start.
pid_t spawn_own_image(const std::vector<std::string>& args, const std::vector<int>& fds,
                      const std::string& who);

// This process's executable as a path ("/usr/local/bin/dpushard"), for messages and argv[0].
std::string own_executable();

}  // namespace dpushard::vart_detail
