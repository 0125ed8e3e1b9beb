// dpushard: run one int8 network across several DPU boards. See README.md and docs/.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "number_guard.hpp"
#include "usage_error.hpp"

int main(int argc, char** argv) {
  dpushard::register_builtin_backends();
  // A backend's hidden subcommand (vart's DPU process, docs/vart.md): not a user command.
  if (const auto backend = dpushard::backend_command(argc, argv))
    return dpushard::run_backend_command(*backend, argc, argv);
  CLI::App app{"dpushard: split int8 networks across KV260 DPU boards and measure scaling"};
  app.require_subcommand(1);
  // One subcommand a line, in the order of `dpushard --help`.
  // clang-format off
  const std::vector<dpushard::cli::Command> commands = {
      dpushard::cli::add_zoo_command(app),
      dpushard::cli::add_inspect_command(app),
      dpushard::cli::add_exec_command(app),
      dpushard::cli::add_import_command(app),
      dpushard::cli::add_predict_command(app),
      dpushard::cli::add_calibrate_command(app),
      dpushard::cli::add_report_command(app),
      dpushard::cli::add_split_command(app),
      dpushard::cli::add_plan_command(app),
      dpushard::cli::add_run_command(app),
      dpushard::cli::add_worker_command(app),
      dpushard::cli::add_backends_command(app),
      dpushard::cli::add_oracle_command(app),
      dpushard::cli::add_serve_command(app),
  };
  // clang-format on
  dpushard::cli::guard_number_options(app);
  // Every error is one line "dpushard: error: ..." on stderr; usage errors exit 2.
  const auto error_line = [](std::string message) {
    std::replace(message.begin(), message.end(), '\n', ' ');
    std::cerr << "dpushard: error: " << message << "\n";
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    error_line(e.what());
    return dpushard::cli::kExitUsage;
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
    return dpushard::cli::kExitUsage;
  } catch (const dpushard::cli::UsageError& e) {
    error_line(e.what());
    return dpushard::cli::kExitUsage;
  } catch (const std::exception& e) {
    // dpushard::Error messages are one line naming the file, field or op at fault.
    error_line(e.what());
    return dpushard::cli::kExitFailure;
  }
}
