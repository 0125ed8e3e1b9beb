#pragma once
// Runs the built `dpushard` command line (DPUSHARD_CLI, set by dpushard_test) through the
// shell, with stdout and stderr captured in files of a scratch folder.

#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "xmodel/fixtures.hpp"

namespace dpushard::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// One shell word, whatever the characters in s.
inline std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `dpushard ARGS` (ARGS already shell-quoted where needed); exit code -1 when it did not exit.
inline CliResult run_cli(const ScratchDir& dir, const std::string& args) {
  const auto out = dir / "stdout.txt";
  const auto err = dir / "stderr.txt";
  const std::string command = quoted(DPUSHARD_CLI) + " " + args + " >" + quoted(out.string()) +
                              " 2>" + quoted(err.string());
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_bytes(out);
  r.err = read_bytes(err);
  return r;
}

}  // namespace dpushard::testing
