#pragma once
// Each subcommand adds itself to the CLI11 app and says how to run once chosen.

#include <CLI/CLI.hpp>
#include <functional>

#include "dpushard/error.hpp"

namespace dpushard::cli {

// A command line that asks for something impossible (options that need each other, a mode
// left out): reported like CLI11's own parse errors, exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Exit codes: 0 success, 1 a failure (bad input file, failed run), 2 a usage error.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct Command {
  CLI::App* app = nullptr;   // the subcommand, owned by the parent app
  std::function<int()> run;  // called after parsing when this subcommand was chosen
};

Command add_zoo_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_exec_command(CLI::App& app);
Command add_import_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_report_command(CLI::App& app);

Command add_split_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_worker_command(CLI::App& app);
// `zoo micro`, added to the zoo command by add_zoo_command.
Command add_zoo_micro_command(CLI::App& zoo);

}  // namespace dpushard::cli
