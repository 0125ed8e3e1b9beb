// TEMPORARY scaffold, replaced by the real command before the foundation lands.
#include "commands.hpp"
#include "dpushard/error.hpp"
namespace dpushard::cli {
Command add_exec_command(CLI::App& app) {
  auto* sub = app.add_subcommand("exec", "(under construction)");
  return {sub, [] () -> int { throw Error("exec: under construction"); }};
}
}  // namespace dpushard::cli
