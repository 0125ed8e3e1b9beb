// TEMPORARY scaffold, replaced by the real command before the foundation lands.
#include "commands.hpp"
#include "dpushard/error.hpp"
namespace dpushard::cli {
Command add_zoo_command(CLI::App& app) {
  auto* sub = app.add_subcommand("zoo", "(under construction)");
  return {sub, [] () -> int { throw Error("zoo: under construction"); }};
}
}  // namespace dpushard::cli
