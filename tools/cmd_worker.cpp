// dpushard worker --listen HOST:PORT --backend NAME [--cache DIR] [--token-file F]
//                 [--threads T] [--queue N] [--max-frame-mb M] [backend options]
//                 [--name NAME] [--port-file F]
// Serves plan fragments over TCP until SIGINT, SIGTERM or a SHUTDOWN message
// (docs/protocol.md, docs/cluster.md). Logs go to stderr.
// Each backend's own options come from its descriptor (dpushard/exec/backend.hpp) and apply to that
// backend only; sim's: --target picks the timing model (a built-in name or a target YAML
// file, as `dpushard predict --target`), --sim-numerics also computes the real outputs (on
// the cpu backend when built, else ref), otherwise outputs travel marked not computed.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/net/net.hpp"

namespace dpushard::cli {
namespace {

struct WorkerArgs {
  std::string listen;
  std::string backend = "ref";
  std::string cache;
  std::string token_file;
  std::string name;
  std::string port_file;
  int threads = 0;  // 0: 1, or a sim worker's target's DPU cores
  std::uint32_t queue = 64;
  std::uint64_t max_frame_mb = 256;
  // The backends' own options given on the command line: backend name -> key -> value.
  std::map<std::string, std::map<std::string, std::string>> backend_settings;
  std::map<std::string, std::vector<std::string>> backend_flags;  // the flags given, by backend
};

// One backend option as a CLI option or flag, and what it holds once parsed.
struct GivenOption {
  std::string backend;
  const BackendOptionSpec* spec = nullptr;
  CLI::Option* option = nullptr;
  std::string value;
  bool flag = false;
};

// Writes the bound port for scripts and tests that listen on port 0 (temp file + rename).
void write_port_file(const std::filesystem::path& path, std::uint16_t port) {
  try {
    write_file_atomically(path, std::to_string(port) + "\n");
  } catch (const Error& e) {
    throw Error(std::string("--port-file ") + e.what());
  }
}

int run_worker(const WorkerArgs& args) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), args.backend) == names.end())
    (void)make_backend(args.backend);  // throws, listing the known backends
  net::WorkerOptions options;
  options.listen = args.listen;
  options.backend = args.backend;
  for (const auto& [backend, settings] : args.backend_settings) {
    if (backend == args.backend) {
      options.backend_options.settings = settings;
      continue;
    }
    std::string given;
    for (const auto& flag : args.backend_flags.at(backend))
      given += (given.empty() ? "" : ", ") + flag;
    const bool one = args.backend_flags.at(backend).size() == 1;
    throw Error("worker: " + given + (one ? " applies" : " apply") + " to --backend " + backend +
                " only");
  }
  // Once per worker: a bad option fails now, not per job; the shared state (sim: one modeled
  // board every fragment of every job here queues for) and the suitable thread count.
  const BackendSetup setup = prepare_backend(args.backend, options.backend_options);
  options.backend_options.shared = setup.shared;
  const int threads = args.threads > 0 ? args.threads : std::max(1, setup.threads);
  options.cache_dir = args.cache;
  options.threads = threads;
  options.queue_capacity = args.queue;
  options.limits.max_payload_bytes = args.max_frame_mb << 20;
  options.name = args.name;
  options.handle_signals = true;
  if (!args.token_file.empty()) options.token = net::read_token_file(args.token_file);
  net::Worker worker(options);
  if (!args.port_file.empty()) write_port_file(args.port_file, worker.port());
  worker.run();
  return 0;
}

}  // namespace

Command add_worker_command(CLI::App& app) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* sub = app.add_subcommand("worker", "Serve plan fragments over TCP");
  sub->add_option("--listen", args->listen, "HOST:PORT to listen on (port 0: any free port)")
      ->required();
  sub->add_option("--backend", args->backend,
                  "Backend that runs the fragments (" + backend_names_text(true) + ")")
      ->capture_default_str();
  sub->add_option("--cache", args->cache,
                  "Folder of the fragment cache (default: a temporary folder removed at exit)");
  sub->add_option("--token-file", args->token_file,
                  "File holding the shared token peers must prove")
      ->check(CLI::ExistingFile);
  sub->add_option("--threads", args->threads,
                  "Compute threads (default: what the backend suits, 1 for most; sim: the "
                  "target's DPU cores, so its fragments run as many frames at once as the "
                  "modeled board)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--queue", args->queue, "Frames that may wait per fragment")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_option("--max-frame-mb", args->max_frame_mb,
                  "Largest tensor or upload chunk accepted, in MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  // Every backend's own options, from its descriptor; each applies to its backend only.
  auto given = std::make_shared<std::vector<GivenOption>>();
  for (const auto& descriptor : backend_descriptors())
    for (const BackendOptionSpec& spec : descriptor->options) {
      GivenOption g;
      g.backend = descriptor->name;
      g.spec = &spec;
      given->push_back(std::move(g));
    }
  for (GivenOption& g : *given) {
    g.option = g.spec->flag ? sub->add_flag(g.spec->flags, g.flag, g.spec->help)
                            : sub->add_option(g.spec->flags, g.value, g.spec->help);
    if (!g.spec->flag) g.option->default_str(g.spec->default_value);
    if (g.spec->hidden) g.option->group("");
  }
  sub->add_option("--name", args->name, "Name in logs and handshakes (default worker@HOST:PORT)");
  sub->add_option("--port-file", args->port_file, "Write the port listened on to this file");
  // The descriptors stay alive with `given` (the registry hands out shared pointers).
  return {sub, [args, given, keep = backend_descriptors()] {
            for (const GivenOption& g : *given)
              if (g.option->count() > 0) {
                args->backend_settings[g.backend][g.spec->key] =
                    g.spec->flag ? (g.flag ? "true" : "false") : g.value;
                args->backend_flags[g.backend].push_back(
                    g.spec->flags.substr(0, g.spec->flags.find(',')));
              }
            return run_worker(*args);
          }};
}

}  // namespace dpushard::cli
