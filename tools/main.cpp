// dpushard: run one int8 network across several DPU boards. See README.md and docs/.

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <vector>

#include "commands.hpp"
#include "dpushard/sim_backend.hpp"
#ifdef DPUSHARD_HAVE_CPU_BACKEND
#include "dpushard/cpu_backend.hpp"
#endif
#ifdef DPUSHARD_HAVE_VART_BACKEND
#include "dpushard/vart_backend.hpp"
#endif

int main(int argc, char** argv) {
  dpushard::register_sim_backend();  // sim lives outside dpushard_exec (docs/perf.md)
#ifdef DPUSHARD_HAVE_CPU_BACKEND
  dpushard::register_cpu_backend();  // cpu needs oneDNN, so it lives outside dpushard_exec
#endif
#ifdef DPUSHARD_HAVE_VART_BACKEND
  dpushard::register_vart_backend();  // vart needs Vitis AI's runtime (docs/vart.md)
#endif
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
      dpushard::cli::add_report_command(app),
      dpushard::cli::add_split_command(app),
      dpushard::cli::add_run_command(app),
      dpushard::cli::add_worker_command(app),
  };
  // clang-format on
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
    return 2;
  } catch (const std::exception& e) {
    // dpushard::Error messages are one line naming the file, field or op at fault.
    std::cerr << "dpushard: error: " << e.what() << "\n";
    return 1;
  }
}
