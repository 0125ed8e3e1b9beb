// TEMPORARY scaffold, replaced by the real command before the foundation lands.
#include "commands.hpp"
#include "dpushard/error.hpp"
namespace dpushard::cli {
Command add_inspect_command(CLI::App& app) {
  auto* sub = app.add_subcommand("inspect", "(under construction)");
  return {sub, [] () -> int { throw Error("inspect: under construction"); }};
}
}  // namespace dpushard::cli
