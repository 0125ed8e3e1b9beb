// `dpushard run PLAN_DIR --cluster cluster.yaml [--frames N] [--inflight K] [--out FILE]`:
// [--input X [--output DIR]]: streams frames (seeded, or those of --input as exec reads
// them) through the workers of cluster.yaml and reports latency percentiles,
// throughput, per-node busy time, bytes on the wire per frame and the sha256 of frame 0's
// outputs (the frame `dpushard exec --seed S` computes). A failed run exits non-zero
// naming the node and frame; a results file is still written, marked incomplete.

#include "run_cluster.hpp"

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include "cli_common.hpp"
#include "cluster_frames.hpp"
#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/compiled_check.hpp"
#include "survivor_planner.hpp"
#include "usage_error.hpp"

namespace dpushard::cli {
namespace {

const char* event_kind(cluster::NodeEvent::Kind kind) {
  switch (kind) {
    case cluster::NodeEvent::Kind::Loss:
      return "loss";
    case cluster::NodeEvent::Kind::Return:
      return "return";
    case cluster::NodeEvent::Kind::DeviceError:
      return "device_error";
  }
  return "loss";
}

// Losses and returns (--on-node-loss replan), frames that could not be served, and with
// --frame-hashes every frame's outputs in the order they were delivered.
void add_recovery_json(nlohmann::json& j, const cluster::RunResult& r) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : r.node_events)
    events.push_back({{"kind", event_kind(e.kind)},
                      {"node", e.node},
                      {"cause", e.cause},
                      {"detected_s", e.detected_s},
                      {"plan_ms", e.plan_ms},
                      {"upload_s", e.upload_s},
                      {"upload_bytes", e.upload_bytes},
                      {"fragments_uploaded", e.fragments_uploaded},
                      {"switch_s", e.switch_s},
                      {"first_frame_s", e.first_frame_s},
                      {"outage_s", e.outage_s},
                      {"frames_resent", e.frames_resent},
                      {"nodes_after", e.nodes_after},
                      {"plan_after", e.plan_after},
                      {"predicted_fps_after", e.predicted_fps_after},
                      {"fps_before", e.fps_before},
                      {"fps_during", e.fps_during},
                      {"fps_after", e.fps_after}});
  nlohmann::json failed = nlohmann::json::array();
  for (const auto& f : r.failed_frames)
    failed.push_back(
        {{"first", f.first}, {"last", f.last}, {"code", f.code}, {"message", f.message}});
  j["on_node_loss"] = r.on_node_loss;
  j["stream_start_unix_s"] = r.stream_start_unix_s;
  j["node_events"] = events;
  j["frames_resent"] = r.frames_resent;
  j["stale_messages_dropped"] = r.stale_messages_dropped;
  j["failed_frames"] = failed;
  if (r.frame_output_sha256.empty()) return;
  nlohmann::json frames = nlohmann::json::array();
  for (const std::int64_t frame : r.delivery_order)
    frames.push_back(
        {{"frame", frame}, {"sha256", r.frame_output_sha256[static_cast<std::size_t>(frame)]}});
  j["frame_outputs"] = frames;
}

nlohmann::json result_json(const std::string& plan_dir, const Plan& plan,
                           const cluster::ClusterConfig& config, const ClusterRunArgs& args,
                           std::uint64_t seed, const cluster::RunResult& r) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : r.nodes)
    nodes.push_back({{"name", n.name},
                     {"address", n.address},
                     {"backend", n.backend},
                     {"dpu_fingerprint", n.dpu_fingerprint == 0
                                             ? nlohmann::json(nullptr)
                                             : nlohmann::json(fingerprint_text(n.dpu_fingerprint))},
                     {"dpu_batch", n.dpu_batch},
                     {"runner_batch", n.runner_batch},
                     {"fragments", n.fragments},
                     {"fragment_runs", n.frames_computed},
                     {"busy_ms", n.busy_ms},
                     {"utilization", n.utilization},
                     {"cpu_ms", n.cpu_ms},
                     {"compute_cpu_ms", n.compute_cpu_ms},
                     {"tensor_bytes_sent", n.tensor_bytes_sent},
                     {"max_queue", n.max_queue}});
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& t : r.first_outputs) {
    if (t.name.empty()) continue;  // never arrived
    if (t.computed) {
      outputs.push_back(tensor_json(t, true));
      continue;
    }
    // A sim node without numerics: right shape, no values, so no hash is claimed.
    outputs.push_back({{"name", t.name},
                       {"shape", t.shape},
                       {"fix_point", t.fix_point},
                       {"sha256", nullptr},
                       {"computed", false}});
  }
  nlohmann::json j = {
      {"plan", plan_dir},
      {"cluster", config.source.string()},
      {"strategy", plan.strategy},
      {"nodes", plan.nodes},
      {"fragments", plan.fragments.size()},
      {"complete", r.complete},
      {"frames", r.frames_requested},
      {"frames_completed", r.frames_completed},
      {"inflight", r.inflight},
      {"seed", seed},
      {"wall_s", r.wall_s},
      {"throughput_fps", r.throughput_fps},
      {"steady_fps", r.steady_fps},
      {"steady_fps_spread", r.steady_fps_spread},
      {"latency_p50_spread", r.latency_p50_spread},
      {"latency_ms",
       {{"p50", r.latency_p50_ms},
        {"p90", r.latency_p90_ms},
        {"p99", r.latency_p99_ms},
        {"mean", r.latency_mean_ms},
        {"min", r.latency_min_ms},
        {"max", r.latency_max_ms}}},
      {"wire_bytes_per_frame", r.wire_bytes_per_frame},
      {"upload",
       {{"bytes", r.upload_bytes},
        {"fragments_uploaded", r.fragments_uploaded},
        {"fragments_cached", r.fragments_cached}}},
      {"outputs", outputs},
      {"per_node", nodes},
      {"link_gbps", config.link_gbps},
      {"link",
       {{"emulation", r.link_emulation}, {"gbps", r.link_gbps}, {"latency_us", r.link_latency_us}}},
      {"orchestrator_cpu_ms_per_frame", r.orchestrator_cpu_ms_per_frame},
      {"shutdown_workers", args.shutdown_workers}};
  j["interrupted"] = r.interrupted_by != 0;
  add_recovery_json(j, r);
  if (!r.complete) {
    j["error"] = r.error;
    j["failed_node"] = r.failed_node;
    j["failed_frame"] = r.failed_frame;
  }
  return j;
}

// Temporary file in the same folder, then rename: readers never see half a file.
void write_atomically(const std::filesystem::path& path, const std::string& text) {
  try {
    write_file_atomically(path, text);
  } catch (const Error& e) {
    throw Error(std::string("--out ") + e.what());
  }
}

void print_human(const nlohmann::json& j) {
  std::ostringstream out;
  out << "run " << j["plan"].get<std::string>() << " on " << j["nodes"] << " nodes ("
      << j["strategy"].get<std::string>() << "): " << j["frames_completed"] << "/" << j["frames"]
      << " frames, " << j["inflight"] << " in flight\n";
  if (j["frames_completed"].get<std::int64_t>() > 0) {
    const auto& l = j["latency_ms"];
    out << "  throughput " << j["throughput_fps"].get<double>() << " fps, latency p50 "
        << l["p50"].get<double>() << " ms, p90 " << l["p90"].get<double>() << " ms, p99 "
        << l["p99"].get<double>() << " ms\n";
    out << "  wire " << human_count(static_cast<long long>(j["wire_bytes_per_frame"].get<double>()))
        << "B per frame, uploads " << human_count(j["upload"]["bytes"].get<long long>()) << "B ("
        << j["upload"]["fragments_uploaded"] << " sent, " << j["upload"]["fragments_cached"]
        << " cached)\n";
  }
  for (const auto& e : j["node_events"]) {
    out << "  " << e["kind"].get<std::string>() << " of node " << e["node"].get<std::string>()
        << " at " << e["detected_s"].get<double>() << " s (" << e["cause"].get<std::string>()
        << ")";
    if (e["first_frame_s"].get<double>() >= 0)
      out << ": first frame on " << e["plan_after"].get<std::string>() << " after "
          << e["first_frame_s"].get<double>() << " s, upload " << e["upload_s"].get<double>()
          << " s, " << e["frames_resent"] << " frames re-sent";
    out << "\n";
  }
  for (const auto& n : j["per_node"])
    out << "  node " << n["name"].get<std::string>() << " (" << n["address"].get<std::string>()
        << "): busy " << n["busy_ms"].get<double>() << " ms, utilization "
        << n["utilization"].get<double>() << "\n";
  for (const auto& t : j["outputs"])
    out << "  out  " << t["name"].get<std::string>() << "  fp " << t["fix_point"] << "  sha256 "
        << (t["sha256"].is_string() ? t["sha256"].get<std::string>() : "(not computed)") << "\n";
  if (j.contains("input_frames"))
    out << "  " << j["input_frames"] << " input frames, " << j["errors"].size() << " failed"
        << (j.contains("output_dir") ? ", outputs in " + j["output_dir"].get<std::string>() : "")
        << "\n";
  std::cerr << out.str();
}

// Set by the handlers of SIGINT and SIGTERM; the orchestrator polls it (RunOptions).
std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int signal) { g_stop_signal.store(signal); }

// Installs the handlers for the run and restores the previous ones after it. A second
// signal gets the default action (SA_RESETHAND): a run that does not stop can be killed.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal.store(0);
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = static_cast<int>(SA_RESETHAND);  // an unsigned constant in glibc
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

std::shared_ptr<ClusterRunArgs> add_cluster_run_options(CLI::App& run) {
  auto args = std::make_shared<ClusterRunArgs>();
  auto* cluster = run.add_option("--cluster", args->cluster_file,
                                 "Run on the workers of this cluster.yaml (docs/cluster.md)")
                      ->check(CLI::ExistingFile);
  if (auto* local = run.get_option_no_throw("--local")) local->excludes(cluster);
  run.add_option("--frames", args->frames, "Frames to stream through the cluster")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  run.add_option("--inflight", args->inflight, "Frames in flight at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  run.add_option("--out", args->out_file,
                 "Also write the results JSON here (atomically; marked incomplete on failure)");
  run.add_flag("--shutdown-workers", args->shutdown_workers, "Stop every worker when the run ends");
  run.add_option("--peer-timeout", args->peer_timeout_s,
                 "Seconds of silence after which a node counts as dead")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  run.add_option("--on-node-loss", args->on_node_loss,
                 "A node lost mid-run: fail (end the run naming it) or replan (go on on the "
                 "others, re-send the frames in flight, take it back when it returns)")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "replan"}));
  run.add_option("--model", args->model,
                 "replan: the model the plan was split from (default: plan.yaml's model.file)");
  run.add_flag("--frame-hashes", args->frame_hashes,
               "Record every frame's output sha256 in delivery order (frame_outputs in the JSON)");
  run.add_flag("--allow-cpu-subgraphs", args->allow_cpu_subgraphs,
               "Compiled fragments: an op the oracle put on the DPU but the compiler on the CPU "
               "is a warning, not an error");
  return args;
}

// Nodes whose cluster.yaml `target:` is not the board the plan priced them on (plan.yaml
// node_targets). Workers do not report their target in the handshake, so this is what can
// be checked: the worker's own --target must match its cluster.yaml entry (docs/cluster.md).
static std::vector<std::string> target_mismatches(const Plan& plan,
                                                  const cluster::ClusterConfig& config) {
  std::vector<std::string> out;
  for (std::size_t n = 0; n < plan.node_targets.size() && n < config.nodes.size(); ++n) {
    const auto& node = config.nodes[n];
    if (node.target.empty()) continue;
    std::string name = node.target;
    try {
      name = resolve_target(node.target).name;  // a target file: its name
    } catch (const Error&) {
      // not a known target: compared as written
    }
    if (name != plan.node_targets[n])
      out.push_back("node '" + node.name + "' (slot " + std::to_string(n) + ") is a " + name +
                    " in " + config.source.string() + ", but the plan priced it as a " +
                    plan.node_targets[n] + ": predictions will not hold");
  }
  return out;
}

int run_cluster(const std::string& plan_dir, const ClusterRunArgs& args, std::uint64_t seed,
                bool json, const std::vector<std::string>& inputs, const OutputOptions& output) {
  const Plan plan = read_plan(plan_dir);
  // Compiled fragments are checked against the plan before any node is contacted; the
  // fingerprint of each node's DPU is checked after its handshake (docs/cluster.md).
  if (has_compiled_fragments(plan)) {
    CompiledCheckOptions check;
    check.allow_cpu_subgraphs = args.allow_cpu_subgraphs;
    for (const std::string& warning : check_compiled_plan(plan, plan_dir, check))
      std::cerr << "dpushard: warning: " << warning << "\n";
  }
  const cluster::ClusterConfig config = cluster::read_cluster_config(args.cluster_file);
  for (const std::string& warning : target_mismatches(plan, config))
    std::cerr << "dpushard: warning: " << warning << "\n";
  cluster::RunOptions options;
  options.frames = args.frames;
  options.inflight = args.inflight;
  options.seed = seed;
  options.shutdown_workers = args.shutdown_workers;
  options.peer_timeout = std::chrono::milliseconds(static_cast<long>(args.peer_timeout_s * 1000));
  options.stop_signal = &g_stop_signal;
  options.hash_every_frame = args.frame_hashes;
  // replan: the planner for the survivors, found and checked before anything is contacted;
  // the plans for every node but one are made while the first frames stream.
  std::unique_ptr<SurvivorPlanner> planner;
  if (args.on_node_loss == "replan") {
    options.on_node_loss = cluster::OnNodeLoss::Replan;
    planner = std::make_unique<SurvivorPlanner>(plan, plan_dir, args.model, args.inflight);
    planner->prepare_ahead();
    options.replanner = [&planner](const std::vector<std::size_t>& nodes, std::string& why) {
      return planner->plan_for(nodes, why);
    };
  }
  // --input: the frames given, read ahead, and each one's outputs (--output) as it completes.
  std::unique_ptr<ClusterFrames> frames;
  if (!inputs.empty()) {
    frames = std::make_unique<ClusterFrames>(plan, plan_dir, inputs, output, args.inflight);
    frames->attach(options);
  }
  cluster::RunResult result;
  {
    const StopSignals stop;  // SIGINT and SIGTERM end the run cleanly from here on
    result = cluster::run_on_cluster(plan, plan_dir, config, options);
  }
  if (frames && result.complete) frames->finish();
  nlohmann::json report = result_json(plan_dir, plan, config, args, seed, result);
  if (frames) frames->add_json(report);
  // The results first: a finished run is never lost to a failing --out (a full disk).
  if (json)
    print_json(report);
  else
    print_human(report);
  std::string out_error;
  if (!args.out_file.empty()) {
    try {
      write_atomically(args.out_file, report.dump(2) + "\n");
    } catch (const Error& e) {
      out_error = e.what();
    }
  }
  if (!result.complete) std::cerr << "dpushard: error: " << result.error << "\n";
  if (!out_error.empty()) std::cerr << "dpushard: error: " << out_error << "\n";
  if (result.interrupted_by != 0) return kExitInterrupted;
  if (!result.complete || !out_error.empty()) return kExitFailure;
  return frames ? frames->exit_code() : 0;
}

}  // namespace dpushard::cli
