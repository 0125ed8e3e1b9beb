// dpushard worker --listen HOST:PORT --backend ref|cpu|sim [--cache DIR] [--token-file F]
//                 [--threads T] [--queue N] [--max-frame-mb M] [--sim-numerics]
//                 [--target FILE|kv260] [--name NAME] [--port-file F]
// Serves plan fragments over TCP until SIGINT, SIGTERM or a SHUTDOWN message
// (docs/protocol.md, docs/cluster.md). Logs go to stderr.
// With --backend sim, --target picks the timing model (a built-in name or a target YAML
// file, as `dpushard predict --target`); --sim-numerics also computes the real outputs (on
// the cpu backend when built, else ref), otherwise outputs travel marked not computed.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "commands.hpp"
#include "dpushard/atomic_file.hpp"
#include "dpushard/backend.hpp"
#include "dpushard/error.hpp"
#include "dpushard/net.hpp"
#include "dpushard/perf.hpp"
#include "dpushard/sim_backend.hpp"

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
  bool sim_numerics = false;
  bool sim_fail_frames = false;
  std::string sim_target = "kv260";
  bool target_given = false;
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
  int threads = args.threads > 0 ? args.threads : 1;
  if (args.backend == "sim") {
    // A bad name or file fails now, not per job. Frames run one per compute thread, so a
    // board of several DPU cores (a ZCU102's 3) needs as many to run its fragments at once.
    const Target target = resolve_target(args.sim_target);
    if (args.threads == 0) threads = static_cast<int>(std::max<std::int64_t>(1, target.dpu_cores));
  } else if (args.sim_numerics || args.target_given || args.sim_fail_frames) {
    throw Error(
        "worker: --sim-numerics, --sim-fail-frames and --target apply to --backend sim only");
  }
  net::WorkerOptions options;
  options.listen = args.listen;
  options.backend = args.backend;
  options.backend_options.sim_numerics = args.sim_numerics;
  options.backend_options.sim_fail_frames = args.sim_fail_frames;
  options.backend_options.sim_target = args.sim_target;
  // One modeled board per worker: every fragment of every job here queues for its DPU.
  if (args.backend == "sim")
    options.backend_options.sim_board = make_sim_board(resolve_target(args.sim_target));
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
  sub->add_option("--backend", args->backend, "Backend that runs the fragments")
      ->capture_default_str();
  sub->add_option("--cache", args->cache,
                  "Folder of the fragment cache (default: a temporary folder removed at exit)");
  sub->add_option("--token-file", args->token_file,
                  "File holding the shared token peers must prove")
      ->check(CLI::ExistingFile);
  sub->add_option("--threads", args->threads,
                  "Compute threads (default 1; sim: the target's DPU cores, so its fragments "
                  "run as many frames at once as the modeled board)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--queue", args->queue, "Frames that may wait per fragment")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_option("--max-frame-mb", args->max_frame_mb,
                  "Largest tensor or upload chunk accepted, in MiB")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_flag("--sim-numerics", args->sim_numerics,
                "sim: also compute the real outputs (else they are marked not computed)");
  // Hidden (no group): a fault injection for the cluster tests, not for users.
  sub->add_flag("--sim-fail-frames", args->sim_fail_frames,
                "sim, tests only: every frame fails with a device error")
      ->group("");
  CLI::Option* target =
      sub->add_option("--target,--sim-target", args->sim_target,
                      "sim: timing model, a built-in target name or a target YAML file")
          ->capture_default_str();
  sub->add_option("--name", args->name, "Name in logs and handshakes (default worker@HOST:PORT)");
  sub->add_option("--port-file", args->port_file, "Write the port listened on to this file");
  return {sub, [args, target] {
            args->target_given = target->count() > 0;
            return run_worker(*args);
          }};
}

}  // namespace dpushard::cli
