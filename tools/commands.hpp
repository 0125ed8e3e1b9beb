#pragma once
// Each subcommand adds itself to the CLI11 app and says how to run once chosen.

#include <CLI/CLI.hpp>
#include <functional>

namespace dpushard::cli {

struct Command {
  CLI::App* app = nullptr;   // the subcommand, owned by the parent app
  std::function<int()> run;  // called after parsing when this subcommand was chosen
};

Command add_zoo_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_exec_command(CLI::App& app);
Command add_import_command(CLI::App& app);
Command add_predict_command(CLI::App& app);
Command add_calibrate_command(CLI::App& app);
Command add_report_command(CLI::App& app);

Command add_split_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_worker_command(CLI::App& app);
Command add_backends_command(CLI::App& app);
Command add_oracle_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
// `zoo micro`, added to the zoo command by add_zoo_command.
Command add_zoo_micro_command(CLI::App& zoo);

}  // namespace dpushard::cli
