// dpushard serve PLAN_DIR --local [--backend ref|cpu] [--threads T] [--runners N]
// dpushard serve PLAN_DIR --cluster C [--inflight K] [--on-node-loss replan|fail] [--model M]
//   [--timing-only]
//   [--listen HOST:PORT] [--token-file F] [--port-file F]
//   [--queue N] [--max-body BYTES] [--read-timeout-ms MS]
// Serves a split plan's model over the Open Inference Protocol (KServe v2 HTTP/REST, with
// the binary tensor data extension) and Prometheus /metrics (docs/inference.md). With
// --local the plan runs in this process; with --cluster on the workers of cluster.yaml, each
// request a frame of one long-lived stream (cluster_executor.hpp).

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "cluster_executor.hpp"
#include "commands.hpp"
#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/net/net.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/serve/local_executor.hpp"
#include "dpushard/serve/serve.hpp"
#include "dpushard/split/split.hpp"
#include "survivor_planner.hpp"
#include "usage_error.hpp"

namespace dpushard::cli {
namespace {

struct ServeArgs {
  std::string plan_dir;
  bool local = false;
  std::string cluster_file;
  std::string backend = "ref";
  int threads = 1;
  int runners = 1;
  std::string listen = "127.0.0.1:8000";
  std::string token_file;
  std::string port_file;
  std::size_t queue = 256;
  std::size_t max_body = 64u << 20;
  int read_timeout_ms = 10000;
  int io_threads = 2;  // a large request being parsed on one leaves the other free
  // --cluster
  int inflight = 0;                     // 0: the plan's Offline count (offline_inflight)
  std::string on_node_loss = "replan";  // a server keeps serving through a lost worker
  std::string model;                    // replan: the source model; empty: plan.yaml's
  double peer_timeout_s = 3.0;
  bool timing_only = false;  // answer frames a sim node only timed (benchmarks)
};

// "HOST:PORT" (an IPv6 host in brackets: "[::1]:8000").
void parse_listen(const std::string& text, ServeOptions& options) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw UsageError("serve: --listen takes HOST:PORT, e.g. 127.0.0.1:8000, not '" + text + "'");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  const std::string p = text.substr(colon + 1);
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (ec != std::errc() || end != p.data() + p.size() || port > 65535)
    throw UsageError("serve: --listen port '" + p + "' is not a port (0-65535)");
  options.host = host;
  options.port = static_cast<std::uint16_t>(port);
}

// The workers of cluster.yaml serve the plan. Listening starts at once (/v2/health/ready
// says 503 until every node has loaded the job); a cluster that cannot start ends serve.
int serve_on_cluster(const ServeArgs& a, ServeOptions& options) {
  const Plan plan = read_plan(a.plan_dir);
  const cluster::ClusterConfig config = cluster::read_cluster_config(a.cluster_file);
  cluster::RunOptions run;
  run.inflight = a.inflight > 0 ? a.inflight : offline_inflight(plan);
  run.peer_timeout = std::chrono::milliseconds(static_cast<long>(a.peer_timeout_s * 1000));
  run.name = "serve";
  run.stats_interval = std::chrono::milliseconds(250);  // /metrics' per-node figures
  std::unique_ptr<SurvivorPlanner> planner;
  if (a.on_node_loss == "replan") {
    try {
      planner = std::make_unique<SurvivorPlanner>(plan, a.plan_dir, a.model, run.inflight);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) +
                  " (serve re-plans around a lost worker by default: give --model, or "
                  "--on-node-loss fail)");
    }
    planner->prepare_ahead();
    run.on_node_loss = cluster::OnNodeLoss::Replan;
    run.replanner = [&planner](const std::vector<std::size_t>& nodes, std::string& why) {
      return planner->plan_for(nodes, why);
    };
  }
  ClusterExecutor executor(plan, a.plan_dir, config, run, a.timing_only);
  // A cluster that never streams (a worker unreachable, a refused upload) ends serve, by the
  // signal run_server stops on: raised only once it listens (its handler installed).
  std::mutex phase_mutex;
  std::condition_variable phase_changed;
  enum class Phase { kStarting, kListening, kOver } phase = Phase::kStarting;
  auto enter = [&](Phase next) {
    {
      std::lock_guard lock(phase_mutex);
      phase = next;
    }
    phase_changed.notify_all();
  };
  std::atomic<bool> start_failed{false};
  std::thread watcher([&] {
    if (executor.wait_until_streaming()) return;
    start_failed = true;
    std::unique_lock lock(phase_mutex);
    phase_changed.wait(lock, [&] { return phase != Phase::kStarting; });
    if (phase == Phase::kListening) std::raise(SIGTERM);
  });
  options.on_listening = [&](std::uint16_t port) {
    std::cout << "serving " << executor.model().name << " on http://" << options.host << ":" << port
              << "/v2 (" << plan.nodes << " nodes of " << a.cluster_file << ", " << run.inflight
              << " frames in flight, on node loss: " << a.on_node_loss
              << (a.timing_only ? ", timing only" : "") << ")" << std::endl;
    if (!a.port_file.empty()) write_file_atomically(a.port_file, std::to_string(port) + "\n");
    enter(Phase::kListening);
  };
  // Whatever run_server does, the stream closes and the watcher returns before both go.
  struct Closing {
    std::function<void()> over;
    ClusterExecutor& executor;
    std::thread& watcher;
    ~Closing() {
      over();
      executor.close();
      watcher.join();
    }
  };
  int code = 0;
  {
    const Closing closing{[&] { enter(Phase::kOver); }, executor, watcher};
    code = run_server(executor, options);
  }
  if (start_failed) throw Error("serve: the cluster did not start: " + executor.why());
  return code;
}

int run_serve(const ServeArgs& a) {
  if (!a.cluster_file.empty() && a.local)
    throw UsageError("serve: --local and --cluster exclude each other");
  if (a.on_node_loss != "replan" && a.on_node_loss != "fail")
    throw UsageError("serve: --on-node-loss takes replan or fail, not '" + a.on_node_loss + "'");
  if (a.timing_only && a.cluster_file.empty())
    throw UsageError("serve: --timing-only is for --cluster (workers on the sim backend)");
  if (a.cluster_file.empty() && !a.local)
    throw UsageError(
        "serve: say where to run the plan: --local (in this process) or --cluster cluster.yaml");
  ServeOptions options;
  parse_listen(a.listen, options);
  if (!a.token_file.empty()) options.token = net::read_token_file(a.token_file);
  options.queue_capacity = a.queue;
  options.max_body_bytes = a.max_body;
  options.read_timeout = std::chrono::milliseconds(a.read_timeout_ms);
  options.io_threads = a.io_threads;
  if (!a.cluster_file.empty()) return serve_on_cluster(a, options);
  const Plan plan = read_plan(a.plan_dir);
  LocalRunOptions run;
  run.backend = a.backend;
  run.threads = a.threads;
  LocalExecutor executor(plan, a.plan_dir, run, a.runners);
  options.on_listening = [&](std::uint16_t port) {
    // The first stdout line says where, so that a script (or test) started with port 0
    // finds the port.
    std::cout << "serving " << executor.model().name << " on http://" << options.host << ":" << port
              << "/v2 (" << a.runners << " runner" << (a.runners == 1 ? "" : "s") << " on "
              << a.backend << ")" << std::endl;
    if (!a.port_file.empty()) write_file_atomically(a.port_file, std::to_string(port) + "\n");
  };
  return run_server(executor, options);
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  ServeArgs& a = *args;
  CLI::App* sub = app.add_subcommand(
      "serve",
      "Serve a plan's model over the Open Inference Protocol (KServe v2 HTTP/REST), in this "
      "process (--local) or on a cluster's workers (--cluster)");
  sub->add_option("plan", a.plan_dir, "The plan folder (plan.yaml + fragments/)")->required();
  sub->add_flag("--local", a.local, "Run requests on the plan in this process");
  sub->add_option("--cluster", a.cluster_file,
                  "Run requests on the workers of this cluster.yaml (docs/cluster.md)");
  sub->add_option("--inflight", a.inflight,
                  "--cluster: frames in flight (default: the plan's Offline count)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--on-node-loss", a.on_node_loss,
                  "--cluster: replan (serve on the survivors, re-send the frames in flight) or "
                  "fail (stop serving)")
      ->capture_default_str();
  sub->add_option(
      "--model", a.model,
      "--cluster with replan: the model the plan was split from (default: plan.yaml's)");
  sub->add_option("--peer-timeout", a.peer_timeout_s,
                  "--cluster: seconds of silence after which a worker counts as lost")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  sub->add_flag("--timing-only", a.timing_only,
                "--cluster, for benchmarks on sim workers: answer a frame the workers only "
                "timed with its zeros, each output marked \"computed\": false (else 500)");
  sub->add_option("--backend", a.backend, "--local: the backend the fragments run on")
      ->capture_default_str();
  sub->add_option("--threads", a.threads, "Threads per runner for backends that use them")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--runners", a.runners,
                  "--local: copies of the plan loaded, so many requests run at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--listen", a.listen, "HOST:PORT to bind (port 0: any free port)")
      ->capture_default_str();
  sub->add_option("--token-file", a.token_file,
                  "File holding a token every request must give as 'Authorization: Bearer TOKEN'");
  sub->add_option("--port-file", a.port_file, "Write the bound port to this file once listening");
  sub->add_option("--queue", a.queue, "Infer requests waiting before new ones get 503")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  sub->add_option("--max-body", a.max_body, "Largest request body in bytes (larger: 413)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 32));
  sub->add_option("--read-timeout-ms", a.read_timeout_ms,
                  "A request must arrive within this (else 408 and the connection closes)")
      ->capture_default_str()
      ->check(CLI::Range(10, 3600000));
  sub->add_option("--io-threads", a.io_threads,
                  "Threads reading, parsing and writing HTTP requests")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  return {sub, [args] { return run_serve(*args); }};
}

}  // namespace dpushard::cli
