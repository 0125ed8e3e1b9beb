#include "scaling/suite.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/perf/ethernet_link.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/split/split.hpp"
#include "scaling/model_store.hpp"
#include "scaling/options.hpp"
#include "scaling/progress.hpp"
#include "server_search/server_search.hpp"

namespace dpushard::bench {
namespace {

// One benchmark: a plan of one model on some nodes, prepared before any timing.
struct Config {
  std::string size;
  int nodes = 1;
  std::string strategy;  // "single" for the 1-node baseline
  std::filesystem::path dir;
  Plan plan;
  std::string error;  // why the plan could not be made; the benchmark reports it
  // The strategy is not possible here (the planner fell back to another, e.g. hybrid on
  // fewer than 4 nodes): reported as "not possible: <why>", nothing is run.
  bool not_possible = false;
  std::string plan_label;           // what the plan is: "experts", "hybrid 2x experts"
  bool planner_choice = false;      // auto picks this plan for (size, nodes)
  bool measured_elsewhere = false;  // auto whose plan another configuration measures
  double params = 0;
  double gmacs = 0;
  std::int64_t frames = 16;  // per timed iteration: --frames, or more to last --min-seconds
  double weight = 1;         // expected seconds, for the progress estimate
  std::string label;         // "10M on 2 nodes, experts"
  int inflight = 1;          // frames in flight: 1 (SingleStream), the plan's saturating count
  int cycle = 1;             // frames per cycle of the plan's frame order (frame_cycle)
  std::string scenario;      // MLPerf LoadGen's: "SingleStream" or "Offline"
};

struct Suite {
  SweepOptions options;
  cluster::ClusterConfig cluster;
  std::unique_ptr<Progress> progress;
  std::vector<std::unique_ptr<Config>> configs;
  // "size/scenario" -> (sum, count): the 1-node runs' fps
  std::map<std::string, std::pair<double, int>> baseline_fps;
  std::map<std::string, double> single_p50_ms;  // size -> one node's SingleStream p50
  std::map<std::string, double> offline_fps;    // "size/nodes/strategy" -> its Offline fps
  bool link_paced = false;                      // what the cluster file asks for the nodes it names
  bool modeled = false;                         // every node runs the sim backend
  std::vector<std::int64_t> dpu_cores;          // per cluster node: its target's (0: unknown)
  struct AutoChoice {
    std::string size;
    int nodes = 0;
    std::string plan_label;
  };
  std::vector<AutoChoice> auto_choices;  // auto plans another configuration measures
  // Plan folders whose warm-up ran: once per plan, before its first scenario's first
  // repetition (the scenarios of a plan run one after the other on the same workers).
  std::set<std::string> warmed;
};

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string joined(const std::set<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ",") + v;
  return out;
}

// The model's size and work from the plan: every fragment once (replicas run the same one).
void fill_cost(Config& c) {
  double params = 0, macs = 0;
  for (const auto& f : c.plan.fragments) {
    params += static_cast<double>(f.cost.params);
    macs += static_cast<double>(f.cost.macs);
  }
  c.params = params;
  c.gmacs = macs / 1e9;
}

// The busiest node's share of the plan's predicted compute per frame: 1/N is a perfect split,
// 1 means one node does everything. Replicated fragments count 1/k on each of their k nodes
// (each replica takes every k-th frame). Explains flat speedups: a pipeline whose cut points
// leave one stage with almost all the work cannot beat one node.
// The plan's predicted compute per frame on its busiest node, in ms.
double busiest_node_ms(const Plan& plan) {
  std::map<int, double> per_node;
  for (const auto& f : plan.fragments)
    for (int node : f.nodes)
      per_node[node] += f.cost.compute_ms / static_cast<double>(f.nodes.size());
  double busiest = 0;
  for (const auto& [node, ms] : per_node) busiest = std::max(busiest, ms);
  return busiest;
}

double busiest_node_share(const Plan& plan) {
  std::map<int, double> per_node;
  double total = 0;
  for (const auto& f : plan.fragments) {
    if (f.nodes.empty()) continue;
    const double share = f.cost.compute_ms / static_cast<double>(f.nodes.size());
    for (int node : f.nodes) per_node[node] += share;
    total += f.cost.compute_ms;
  }
  if (!(total > 0)) return 0;
  double busiest = 0;
  for (const auto& [node, ms] : per_node) busiest = std::max(busiest, ms);
  return busiest / total;
}

// DPU utilization from the plan (the timing model's per fragment, plan.yaml; nothing when
// the plan has none): the whole model's share of MACs and of one frame's time on the DPU
// (each fragment once), the DPU ms of a frame over all nodes and on the busiest node
// (replicas 1/k each, as busiest_node_share), and each fragment's two shares.
void dpu_counters(benchmark::State& state, const Plan& plan) {
  double macs = 0, dpu_macs = 0, dpu_ms = 0, frame_ms = 0;
  std::map<int, double> per_node;
  for (const auto& f : plan.fragments)
    if (!(f.cost.frame_ms > 0) || f.nodes.empty()) return;
  for (const auto& f : plan.fragments) {
    macs += f.cost.work_macs;
    dpu_macs += f.cost.dpu_macs;
    dpu_ms += f.cost.dpu_ms;
    frame_ms += f.cost.frame_ms;
    for (int node : f.nodes) per_node[node] += f.cost.dpu_ms / static_cast<double>(f.nodes.size());
    state.counters["fragment_dpu_mac_share/" + f.name] =
        f.cost.work_macs > 0 ? f.cost.dpu_macs / f.cost.work_macs : 0.0;
    state.counters["fragment_dpu_time_share/" + f.name] = f.cost.dpu_ms / f.cost.frame_ms;
  }
  double busiest = 0;
  for (const auto& [node, ms] : per_node) busiest = std::max(busiest, ms);
  state.counters["dpu_mac_share"] = macs > 0 ? dpu_macs / macs : 0.0;
  state.counters["dpu_time_share"] = dpu_ms / frame_ms;
  state.counters["dpu_ms"] = dpu_ms;
  state.counters["busiest_dpu_ms"] = busiest;
}

// The most frames per second a plan can run, each a hard upper bound (0: not known); a
// measured rate above one is an artifact of the measurement (the report flags it).
struct RateBounds {
  // A fragment runs its frames one after the other on each of its nodes, and the fragments
  // a board holds share its DPU cores: the tighter of the two
  double node_fps = 0;
  double link_fps = 0;  // the busiest node's port, each direction, at the link's goodput
  double port_fps = 0;  // the head node's port: inputs out, outputs in
};

// `modeled`: the nodes take the timing model's time per fragment (sim), which is what the
// plan's compute_ms is when the plan was priced by a timing model. `goodput_bytes_per_s`:
// the paced link's payload rate (0: not paced, no link bounds). Bytes between fragments on
// one node cross no port; the bytes counted are payload only (headers left out), so each
// bound is at least the true one.
// `dpu_cores`: each node slot's DPU cores (its target's; 0 or a slot past the end: not known,
// no board bound for it).
RateBounds rate_bounds(const Plan& plan, bool modeled, double goodput_bytes_per_s,
                       const std::vector<std::int64_t>& dpu_cores) {
  RateBounds b;
  if (modeled && plan.cost_model.rfind("timing:", 0) == 0) {
    // Per board: the DPU ms of a frame over every fragment it holds (a replica's 1/copies),
    // served by its DPU cores (the sim backend's SimBoard reserves one core per fragment
    // run, whichever fragment asks). A board holding two fragments can do no more than that,
    // which is tighter than either fragment's own bound.
    std::map<int, double> board_dpu_ms;
    for (const auto& f : plan.fragments) {
      if (!(f.cost.compute_ms > 0) || f.nodes.empty()) continue;
      double copies = static_cast<double>(f.nodes.size());
      if (!plan.frame_share.empty()) {
        const int most = *std::max_element(plan.frame_share.begin(), plan.frame_share.end());
        int sum = 0;
        for (int share : plan.frame_share) sum += share;
        if (most > 0) copies = static_cast<double>(sum) / most;
      }
      const double fps = copies * 1000.0 / f.cost.compute_ms;
      b.node_fps = b.node_fps > 0 ? std::min(b.node_fps, fps) : fps;
      if (f.cost.dpu_ms > 0)
        for (int node : f.nodes) board_dpu_ms[node] += f.cost.dpu_ms / copies;
    }
    for (const auto& [node, ms] : board_dpu_ms) {
      const auto slot = static_cast<std::size_t>(node);
      if (slot >= dpu_cores.size() || dpu_cores[slot] <= 0 || !(ms > 0)) continue;
      const double fps = static_cast<double>(dpu_cores[slot]) * 1000.0 / ms;
      if (b.node_fps > 0) b.node_fps = std::min(b.node_fps, fps);
    }
  }
  if (goodput_bytes_per_s > 0) {
    std::map<int, double> tx, rx;  // per node slot, bytes per frame
    double head_tx = 0, head_rx = 0;
    auto nodes_of = [&](const std::string& name) -> const std::vector<int>* {
      for (const auto& f : plan.fragments)
        if (f.name == name) return &f.nodes;
      return nullptr;
    };
    for (const auto& e : plan.edges) {
      const auto bytes = static_cast<double>(e.bytes);
      const std::vector<int>* from = e.from == "model" ? nullptr : nodes_of(e.from);
      const std::vector<int>* to = e.to == "model" ? nullptr : nodes_of(e.to);
      if (e.from == "model") head_tx += bytes;
      if (e.to == "model") head_rx += bytes;
      // Replica r of the producer sends to replica r of the consumer (or the head node).
      const std::size_t copies = std::max(from ? from->size() : 1, to ? to->size() : 1);
      for (std::size_t r = 0; r < copies; ++r) {
        const int a = from ? (*from)[std::min(r, from->size() - 1)] : -1;
        const int z = to ? (*to)[std::min(r, to->size() - 1)] : -1;
        if (a == z) continue;  // one node: no port crossed
        const double share = bytes / static_cast<double>(copies);
        if (a >= 0) tx[a] += share;
        if (z >= 0) rx[z] += share;
      }
    }
    double busiest = 0;
    for (const auto& [node, bytes] : tx) busiest = std::max(busiest, bytes);
    for (const auto& [node, bytes] : rx) busiest = std::max(busiest, bytes);
    if (busiest > 0) b.link_fps = goodput_bytes_per_s / busiest;
    const double head = std::max(head_tx, head_rx);
    if (head > 0) b.port_fps = goodput_bytes_per_s / head;
  }
  return b;
}

// Frames for one timed run: the fill (the frames in flight, rounded up to whole cycles of
// the frame order), then whole cycles lasting --min-seconds at `fps` (at least --frames and
// two cycles), then the drain (the frames in flight less one, which finish as the window
// empties), so the rate is counted over whole cycles of a span long enough to repeat with
// the window full at both ends (cluster::steady_rate).
std::int64_t frames_for(const SweepOptions& o, const Config& c, double fps) {
  const std::int64_t cycle = std::max(c.cycle, 1);
  const std::int64_t inflight = std::max(c.inflight, 1);
  const std::int64_t fill = (inflight + cycle - 1) / cycle * cycle;
  const double want = std::max(static_cast<double>(o.frames), o.min_seconds * fps);
  const auto cycles = std::max<std::int64_t>(
      2, static_cast<std::int64_t>(std::ceil(want / static_cast<double>(cycle))));
  return fill + cycles * cycle + inflight - 1;
}

// A configuration in one of MLPerf LoadGen's scenarios: SingleStream streams one frame at a
// time (its latency is a frame's alone, with no queue), Offline keeps enough frames in
// flight to saturate the plan (the planner's offline_inflight(), or --inflight /
// --inflight-per-node where given); then the frames and the expected time of its runs.
void schedule(const SweepOptions& o, Config& c, const std::string& scenario) {
  c.scenario = scenario;
  c.label += " (" + scenario + ")";
  if (scenario == "SingleStream") {
    c.inflight = 1;
  } else {  // Offline, and Server's window (its arrivals decide what is sent)
    c.inflight = o.inflight_per_node > 0 ? o.inflight_per_node * c.nodes
                 : o.inflight > 0        ? o.inflight
                                         : offline_inflight(c.plan);
  }
  if (!c.error.empty()) return;
  const PlanPrediction& p = c.plan.predicted;
  double fps = p.throughput_fps > 0 ? p.throughput_fps : 10.0;
  if (scenario == "SingleStream" && p.latency_ms > 0) fps = std::min(fps, 1000.0 / p.latency_ms);
  c.frames = frames_for(o, c, fps);
  if (scenario == "Server")  // each trial: at least 64 arrivals or --min-seconds
    c.frames = o.server_trials *
               std::max<std::int64_t>(64, static_cast<std::int64_t>(o.min_seconds * fps / 2));
  const double frames = static_cast<double>(c.frames * o.iterations + o.warmup_frames);
  const double loads = o.warmup_frames > 0 ? 2.0 : 1.0;
  c.weight = loads * (0.3 + c.params / 1e8) * o.iterations + frames / fps;
}

// What the plan is, as the planner's candidates name it.
std::string plan_label(const Plan& plan) {
  return dpushard::plan_label(plan.strategy, plan.replicas, plan.inner_strategy);
}

// The same plan: the same strategy and fragments (by hash) on the same node slots.
bool same_plan(const Plan& a, const Plan& b) {
  if (a.strategy != b.strategy || a.inner_strategy != b.inner_strategy ||
      a.replicas != b.replicas || a.fragments.size() != b.fragments.size())
    return false;
  for (std::size_t i = 0; i < a.fragments.size(); ++i)
    if (a.fragments[i].sha256 != b.fragments[i].sha256 ||
        a.fragments[i].nodes != b.fragments[i].nodes)
      return false;
  return true;
}

// A named strategy the planner could not make on this many nodes: it fell back to another
// (experts -> pipeline -> replicate; hybrid on fewer than 4 nodes -> replicate). Measuring
// the fallback under the requested name would report a plan that does not exist, so the
// configuration says why instead. Empty when the plan is what was asked for.
std::string not_possible_reason(const Plan& plan, const std::string& requested) {
  if (strategy_chooses(requested) || plan.nodes == 1) return "";
  for (const auto& a : plan.adjustments)
    if (a.kind == "fallback") return a.reason;
  if (plan.strategy != requested)
    return requested + " is not possible here; the planner made " + plan_label(plan);
  return "";
}

// `auto` on (size, nodes): mark the configuration whose plan it is, or measure auto's own
// when no other configuration has it (a hybrid factorisation the hybrid row did not take).
void resolve_auto(std::vector<std::unique_ptr<Config>>& group) {
  for (auto& a : group) {
    if (!strategy_chooses(a->strategy) || !a->error.empty()) continue;
    a->planner_choice = true;
    for (auto& other : group) {
      if (other.get() == a.get() || !other->error.empty()) continue;
      if (same_plan(other->plan, a->plan)) {
        other->planner_choice = true;
        a->measured_elsewhere = true;
        a->weight = 0;
        break;
      }
    }
  }
}

void prepare(Suite& s) {
  const SweepOptions& o = s.options;
  std::vector<int> counts = o.node_counts;
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  // Plan node slot i runs on the cluster's i-th node: its board prices the plans made here.
  std::vector<std::string> node_targets;
  for (const auto& node : s.cluster.nodes) node_targets.push_back(node.target);
  s.progress->note("making or reading " + std::to_string(o.sizes.size()) +
                   " model(s) and their "
                   "plans in " +
                   o.models_dir.string());
  for (const auto& size : o.sizes) {
    for (int n : counts) {
      if (!swept_on(o, n, size)) continue;  // --node-sizes: not this size on n nodes
      const std::vector<std::string> strategies =
          n == 1 ? std::vector<std::string>{"single"} : strategies_on(o, n);
      std::vector<std::unique_ptr<Config>> group;  // this size on n nodes
      for (const auto& strategy : strategies) {
        auto c = std::make_unique<Config>();
        c->size = size;
        c->nodes = n;
        c->strategy = strategy;
        c->dir = plan_dir(o, size, n, strategy);
        c->label = o.family + " " + size + " on " + std::to_string(n) + " node" +
                   (n == 1 ? "" : "s, " + strategy);
        try {
          c->plan = ensure_plan(o, size, n, strategy, s.cluster.link_gbps, node_targets);
          c->plan_label = plan_label(c->plan);
          if (const std::string why = not_possible_reason(c->plan, strategy); !why.empty()) {
            c->error = why;
            c->not_possible = true;
            c->plan_label.clear();  // the fallback's plan is not this strategy's
            c->weight = 0;
            s.progress->note(c->label + ": not possible: " + why);
            group.push_back(std::move(c));
            continue;
          }
          fill_cost(*c);
          c->cycle = cluster::frame_cycle(c->plan);
        } catch (const Error& e) {
          c->error = e.what();
          s.progress->note(c->label + ": no plan: " + c->error);
        }
        group.push_back(std::move(c));
      }
      resolve_auto(group);
      for (auto& c : group) {
        if (c->measured_elsewhere) {
          s.progress->note(c->label + ": the planner's choice is " + c->plan_label +
                           ", measured as that strategy's configuration");
          s.auto_choices.push_back({c->size, c->nodes, c->plan_label});
          continue;  // not measured twice
        }
        for (const auto& scenario : o.scenarios) {
          // Server: one node (unless --no-server-one-node), and replicate and auto (the
          // planner's choice) on the most nodes.
          const bool server_here = c->nodes == 1
                                       ? o.server_one_node
                                       : c->nodes == counts.back() &&
                                             (strategy_is_baseline(c->strategy) ||
                                              strategy_chooses(c->strategy) || c->planner_choice);
          if (scenario == "Server" && !server_here) continue;
          auto sc = std::make_unique<Config>(*c);
          schedule(o, *sc, scenario);
          s.configs.push_back(std::move(sc));
        }
      }
    }
  }
}

std::string run_error(const cluster::RunResult& r) {
  std::string msg = r.error.empty() ? "the run did not complete" : r.error;
  if (!r.failed_node.empty() && msg.find(r.failed_node) == std::string::npos)
    msg += " (node " + r.failed_node + ")";
  if (r.failed_frame >= 0 && msg.find("frame") == std::string::npos)
    msg += " (frame " + std::to_string(r.failed_frame) + ")";
  return msg;
}

cluster::RunResult run_once(const Suite& s, const Config& c, std::int64_t frames) {
  cluster::RunOptions ro;
  ro.frames = frames;
  ro.inflight = c.inflight;
  ro.name = "bench_" + s.options.family + "_scaling";
  try {
    return cluster::run_on_cluster(c.plan, c.dir, s.cluster, ro);
  } catch (const std::exception& e) {
    cluster::RunResult failed;
    failed.error = e.what();
    return failed;
  }
}

std::string config_key(const Config& c) {
  return c.size + "/" + std::to_string(c.nodes) + "/" + c.strategy;
}

// MLPerf LoadGen's Server scenario: frames arrive as a Poisson process; the result is the
// highest rate whose p99 latency stays under the bound (--max-latency-ms, else
// --server-latency-multiple x one node's SingleStream p50 of the model), found by bisection
// between 0 and the configuration's Offline rate in --server-trials runs (search_server_rate,
// which bench_serve_load --search shares).
void run_server(benchmark::State& state, Suite& s, Config& c) {
  const SweepOptions& o = s.options;
  double bound_ms = o.max_latency_ms;
  if (!(bound_ms > 0)) {
    const auto it = s.single_p50_ms.find(c.size);
    if (it == s.single_p50_ms.end()) {
      state.SkipWithError("Server: no SingleStream p50 of one node for the latency bound");
      s.progress->finish(c.label, c.weight, "FAILED: no one-node SingleStream p50");
      return;
    }
    bound_ms = o.server_latency_multiple * it->second;
  }
  const auto offline = s.offline_fps.find(config_key(c));
  const double top =
      offline != s.offline_fps.end() ? offline->second : c.plan.predicted.throughput_fps;
  double best = 0, best_p99 = 0, best_p50 = 0, wall = 0;
  int trials = 0;
  for (auto _ : state) {
    ServerSearchOptions search;
    search.top_rate = top;
    search.bound_ms = bound_ms;
    search.rates = o.server_trials;
    const ServerSearchResult found =
        search_server_rate(search, [&](double rate, std::uint64_t seed) {
          cluster::RunOptions ro;
          ro.frames = std::max<std::int64_t>(64, static_cast<std::int64_t>(rate * o.min_seconds));
          ro.arrival_fps = rate;
          ro.inflight = c.inflight;  // the Offline window: arrivals beyond it queue at the head
          ro.seed = seed;
          ro.name = "bench_" + o.family + "_scaling";
          cluster::RunResult r;
          try {
            r = cluster::run_on_cluster(c.plan, c.dir, s.cluster, ro);
          } catch (const std::exception& e) {
            r.error = e.what();
          }
          ServerTrial t;
          t.complete = r.complete;
          if (!r.complete) t.error = run_error(r);
          t.p50_ms = r.latency_p50_ms;
          t.p99_ms = r.latency_p99_ms;
          t.wall_s = r.wall_s;
          return t;
        });
    if (!found.error.empty()) {
      state.SkipWithError(("Server: " + found.error).c_str());
      s.progress->finish(c.label, c.weight, "FAILED: " + found.error);
      return;
    }
    wall += found.wall_s;
    trials += found.trials;
    if (found.rate > best) {
      best = found.rate;
      best_p99 = found.p99_ms;
      best_p50 = found.p50_ms;
    }
    state.SetIterationTime(wall);
  }
  state.counters["params"] = c.params;
  state.counters["gmacs"] = c.gmacs;
  state.counters["nodes"] = c.nodes;
  state.counters["fps"] = best;  // the highest rate whose p99 stayed under the bound
  state.counters["latency_bound_ms"] = bound_ms;
  state.counters["p50_ms"] = best_p50;
  state.counters["p99_ms"] = best_p99;
  state.counters["offline_fps"] = top;
  state.counters["server_trials"] = trials;
  state.counters["predicted_fps"] = c.plan.predicted.throughput_fps;
  state.counters["predicted_latency_ms"] = c.plan.predicted.latency_ms;
  state.counters["plan_max_latency_ms"] = c.plan.max_latency_ms;  // split --max-latency-ms
  s.progress->finish(c.label, c.weight,
                     fixed(best, 1) + " fps with p99 " + fixed(best_p99, 1) +
                         " ms <= " + fixed(bound_ms, 1) + " ms");
}

void run_config(benchmark::State& state, Suite& s, Config& c) {
  s.progress->start(c.label);
  // The plan's own name, and the planner's mark: the report reads both from the label.
  if (!c.plan_label.empty())
    state.SetLabel(c.plan_label + (c.planner_choice ? " [planner's choice]" : ""));
  auto skip = [&](const std::string& why) {
    state.SkipWithError(why.c_str());
    s.progress->finish(c.label, c.weight, "FAILED: " + why);
  };
  if (c.not_possible) {
    state.SkipWithError(("not possible: " + c.error).c_str());
    s.progress->finish(c.label, c.weight, "not possible: " + c.error);
    return;
  }
  if (!c.error.empty()) {
    skip("no plan: " + c.error);
    return;
  }
  if (c.scenario == "Server") return run_server(state, s, c);
  // Once per plan (connections, worker caches): its other scenarios, which run right after
  // on the same workers, and the repetitions need no new warm-up.
  if (s.options.warmup_frames > 0 && !s.warmed.count(c.dir.string())) {
    const cluster::RunResult warm = run_once(s, c, s.options.warmup_frames);
    if (!warm.complete) {
      skip("warm-up: " + run_error(warm));
      return;
    }
    s.warmed.insert(c.dir.string());
  }

  double wall = 0, steady = 0, p50 = 0, p90 = 0, p99 = 0, wire = 0;
  // Per frame: the busiest node's backend time, the largest worker and the orchestrator
  // CPU time on this machine, and the busiest node's bytes sent.
  double node_ms = 0, worker_cpu_ms = 0, orchestrator_cpu_ms = 0, node_tx_bytes = 0;
  double paced = 0, fps_spread = 0, p50_spread = 0;
  int runs = 0;
  std::int64_t frames = 0;
  for (auto _ : state) {
    cluster::RunResult r = run_once(s, c, c.frames);
    // Time-based: a plan much faster than predicted streams again, for --min-seconds at the
    // rate it measured (then every later repetition streams that many too).
    if (r.complete && r.steady_fps > 0) {
      const std::int64_t need = frames_for(s.options, c, r.steady_fps);
      if (need > c.frames + c.frames / 4) {
        c.frames = need;
        r = run_once(s, c, c.frames);
      }
    }
    if (!r.complete) {
      skip(run_error(r));
      return;
    }
    state.SetIterationTime(r.wall_s);  // the distributed span only
    wall += r.wall_s;
    steady += r.steady_fps;
    fps_spread += r.steady_fps_spread;
    p50_spread += r.latency_p50_spread;
    frames += r.frames_completed;
    p50 += r.latency_p50_ms;
    p90 += r.latency_p90_ms;
    p99 += r.latency_p99_ms;
    wire += r.wire_bytes_per_frame;
    const double per = static_cast<double>(std::max<std::int64_t>(1, r.frames_completed));
    double busiest = 0, cpu = 0, tx = 0;
    for (const auto& node : r.nodes) {
      busiest = std::max(busiest, node.busy_ms / per);
      cpu = std::max(cpu, node.cpu_ms / per);
      tx = std::max(tx, static_cast<double>(node.tensor_bytes_sent) / per);
    }
    node_ms += busiest;
    worker_cpu_ms += cpu;
    node_tx_bytes += tx;
    orchestrator_cpu_ms += r.orchestrator_cpu_ms_per_frame;
    paced += r.link_emulation == "paced" ? 1 : 0;
    ++runs;
  }
  if (runs == 0 || !(wall > 0)) {
    skip("no timed iteration completed");
    return;
  }
  const double n = runs;
  // The steady-state rate (the pipeline's fill left out), as the planner predicts it.
  const double fps = steady / n;
  const double span_fps = static_cast<double>(frames) / wall;
  const std::string baseline_key = c.size + "/" + c.scenario;
  if (c.scenario == "SingleStream" && c.nodes == 1) s.single_p50_ms[c.size] = p50 / runs;
  if (c.scenario == "Offline") s.offline_fps[config_key(c)] = steady / runs;
  if (c.nodes == 1) {
    auto& [sum, count] = s.baseline_fps[baseline_key];
    sum += fps;
    ++count;
  }
  state.counters["params"] = c.params;
  state.counters["gmacs"] = c.gmacs;
  state.counters["nodes"] = c.nodes;
  state.counters["frames"] = static_cast<double>(frames) / n;
  state.counters["inflight"] = c.inflight;  // Offline: the planner's saturating count
  state.counters["predicted_latency_ms"] = c.plan.predicted.latency_ms;
  state.counters["fps"] = fps;
  state.counters["span_fps"] = span_fps;
  // The run's own spread: its steady window's halves' rates and its frames' halves' median
  // latencies apart (RunResult); the report uses them in place of the noise margin where
  // they are larger.
  state.counters["fps_spread"] = fps_spread / n;
  state.counters["p50_spread"] = p50_spread / n;
  state.counters["predicted_fps"] = c.plan.predicted.throughput_fps;
  state.counters["p50_ms"] = p50 / n;
  state.counters["p90_ms"] = p90 / n;
  state.counters["p99_ms"] = p99 / n;
  state.counters["bytes_per_frame"] = wire / n;
  state.counters["node_bytes_per_frame"] =
      static_cast<double>(c.plan.predicted.wire_bytes_per_frame);
  state.counters["busiest_node_share"] = busiest_node_share(c.plan);
  state.counters["predicted_node_ms"] = busiest_node_ms(c.plan);
  state.counters["node_ms"] = node_ms / n;
  state.counters["worker_cpu_ms"] = worker_cpu_ms / n;
  state.counters["orchestrator_cpu_ms"] = orchestrator_cpu_ms / n;
  state.counters["node_tx_bytes"] = node_tx_bytes / n;
  state.counters["link_paced"] = paced / n;
  const double goodput =
      paced > 0 ? s.cluster.link_gbps * 1e9 / 8 * ethernet::kPayloadEfficiency : 0.0;
  const RateBounds bounds = rate_bounds(c.plan, s.modeled, goodput, s.dpu_cores);
  state.counters["bound_node_fps"] = bounds.node_fps;
  state.counters["bound_link_fps"] = bounds.link_fps;
  state.counters["bound_port_fps"] = bounds.port_fps;
  state.counters["plan_max_latency_ms"] = c.plan.max_latency_ms;
  dpu_counters(state, c.plan);
  std::string result = fixed(fps, 1) + " fps, p50 " + fixed(p50 / n, 1) + " ms";
  if (const auto it = s.baseline_fps.find(baseline_key); it != s.baseline_fps.end()) {
    const double base = it->second.first / it->second.second;
    const double speedup = fps / base;
    state.counters["speedup"] = speedup;
    state.counters["efficiency"] = speedup / c.nodes;
    if (c.nodes > 1) result += ", " + fixed(speedup, 2) + "x over 1 node";
  }
  s.progress->finish(c.label, c.weight, result);
}

void add_context(const Suite& s) {
  const SweepOptions& o = s.options;
  std::set<std::string> backends, targets;
  for (const auto& node : s.cluster.nodes) {
    backends.insert(node.backend.empty() ? "any" : node.backend);
    targets.insert(node.target.empty() ? "unknown" : node.target);
  }
  const std::string backend = joined(backends);
  benchmark::AddCustomContext("suite", "bench_" + o.family + "_scaling");
  benchmark::AddCustomContext("family", o.family);
  if (o.family != "cnn") benchmark::AddCustomContext("attention", o.attention);
  benchmark::AddCustomContext("git_revision", o.git_revision);
  benchmark::AddCustomContext("backend", backend);
  benchmark::AddCustomContext("target", joined(targets));
  benchmark::AddCustomContext("timing", s.modeled ? "modeled" : "measured");
  benchmark::AddCustomContext("link_gbps", fixed(s.cluster.link_gbps, 3));
  benchmark::AddCustomContext("link_latency_us", fixed(s.cluster.link_latency_us, 0));
  benchmark::AddCustomContext("link_emulation", s.link_paced ? "paced" : "off");
  benchmark::AddCustomContext("repetitions", std::to_string(o.repetitions));
  benchmark::AddCustomContext("cost_target", o.cost_target.empty() ? "roofline" : o.cost_target);
  benchmark::AddCustomContext("inventory", o.inventory);
  benchmark::AddCustomContext("cluster_file", o.cluster_file.string());
  benchmark::AddCustomContext("cluster_nodes", std::to_string(s.cluster.nodes.size()));
  benchmark::AddCustomContext("frames", std::to_string(o.frames));
  benchmark::AddCustomContext("min_seconds", fixed(o.min_seconds, 2));
  std::string scenarios;
  for (const auto& sc : o.scenarios) scenarios += (scenarios.empty() ? "" : ",") + sc;
  benchmark::AddCustomContext("scenarios", scenarios);
  benchmark::AddCustomContext("server_nodes", o.server_one_node ? "1 and the largest node count"
                                                                : "the largest node count");
  benchmark::AddCustomContext(
      "inflight",
      "SingleStream 1; Offline " +
          (o.inflight_per_node > 0 ? "at least " + std::to_string(o.inflight_per_node) + " per node"
           : o.inflight > 0        ? std::to_string(o.inflight)
                                   : std::string("the planner's offline_inflight()")));
  benchmark::AddCustomContext("warmup_frames", std::to_string(o.warmup_frames));
  benchmark::AddCustomContext("iterations", std::to_string(o.iterations));
  benchmark::AddCustomContext("zoo_experts", std::to_string(o.experts));
  benchmark::AddCustomContext("zoo_input", o.input);
  benchmark::AddCustomContext("zoo_seed", std::to_string(o.seed));
  benchmark::AddCustomContext("models_dir", o.models_dir.string());
  benchmark::AddCustomContext("zoo_weights", o.weights ? "yes" : "no");
  benchmark::AddCustomContext("objective", o.objective);
  // A node count swept for a subset (--node-strategies, --node-sizes): "4=hybrid,replicate".
  auto per_node = [](const std::map<int, std::vector<std::string>>& m) {
    std::string out;
    for (const auto& [n, values] : m) {
      out += (out.empty() ? "" : "; ") + std::to_string(n) + "=";
      for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + values[i];
    }
    return out;
  };
  if (!o.node_strategies.empty())
    benchmark::AddCustomContext("node_strategies", per_node(o.node_strategies));
  if (!o.node_sizes.empty()) benchmark::AddCustomContext("node_sizes", per_node(o.node_sizes));
  // Where auto's plan is another configuration's, that configuration's label carries the
  // mark; the choice is also here, per size and node count, for a reader of the JSON.
  for (const auto& choice : s.auto_choices)
    benchmark::AddCustomContext("planner_choice/" + o.family + "/params:" + choice.size +
                                    "/nodes:" + std::to_string(choice.nodes),
                                choice.plan_label);
}

void register_all(Suite& s) {
  for (const auto& c : s.configs) {
    const std::string name = s.options.family + "/params:" + c->size +
                             "/nodes:" + std::to_string(c->nodes) + "/strategy:" + c->strategy +
                             "/scenario:" + c->scenario;
    Config* config = c.get();
    benchmark::RegisterBenchmark(
        name.c_str(), [&s, config](benchmark::State& state) { run_config(state, s, *config); })
        ->UseManualTime()
        ->Iterations(s.options.iterations)
        ->Unit(benchmark::kMillisecond);
  }
}

bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

}  // namespace

int run_scaling_suite(const std::string& family, int argc, char** argv) {
  if (wants_help(argc, argv)) {
    char help[] = "--help";
    char* args[] = {argv[0], help, nullptr};
    parse_sweep_options(family, 2, args, 1);  // prints and exits
    return 0;
  }
  const int repetitions = benchmark_repetitions_flag(argc, argv);
  benchmark::Initialize(&argc, argv);
  Suite s;
  try {
    s.options = parse_sweep_options(family, argc, argv, repetitions);
    register_builtin_backends();  // cluster.yaml's backends and their traits (the registry)
    s.cluster = cluster::read_cluster_config(s.options.cluster_file);
    SweepOptions& o = s.options;
    const int size = static_cast<int>(s.cluster.nodes.size());
    if (o.node_counts.empty())
      for (int n = 1; n <= size; ++n) o.node_counts.push_back(n);
    for (int n : o.node_counts)
      if (n > size)
        throw Error("--nodes " + std::to_string(n) + ": the cluster " + o.cluster_file.string() +
                    " has " + std::to_string(size) + " nodes");
    if (std::find(o.node_counts.begin(), o.node_counts.end(), 1) == o.node_counts.end())
      std::cerr << "bench_" << family << "_scaling: warning: --nodes has no 1: no speedups\n";
    std::vector<std::string> backends;
    for (const auto& node : s.cluster.nodes)
      backends.push_back(node.backend.empty() ? "any" : node.backend);
    s.link_paced = cluster::link_is_paced(s.cluster, backends);
    s.modeled = std::all_of(backends.begin(), backends.end(), [](const std::string& b) {
      const auto descriptor = find_backend(b);  // "any": not known, so not modeled
      return descriptor && descriptor->traits.models_time;
    });
    // Each node's DPU cores, for the board bound (bound_node_fps); 0 where not known (no
    // target named, or one this machine cannot read, such as a file on the board only):
    // that board then has no board bound, only its fragments' own.
    for (const auto& node : s.cluster.nodes) {
      std::int64_t cores = 0;
      if (s.modeled && !node.target.empty()) {
        try {
          cores = resolve_target(node.target).dpu_cores;
        } catch (const std::exception&) {
          cores = 0;
        }
      }
      s.dpu_cores.push_back(cores);
    }
    s.progress = std::make_unique<Progress>(family, o.progress_file);
    prepare(s);
    double weight = 0;
    for (const auto& c : s.configs) weight += c->weight;
    s.progress->set_total(static_cast<int>(s.configs.size()) * o.repetitions,
                          weight * o.repetitions);
    s.progress->note(std::to_string(s.configs.size()) + " configuration(s) x " +
                     std::to_string(o.repetitions) + " repetition(s) on " + std::to_string(size) +
                     " node(s), at least " + std::to_string(o.frames) + " frames and " +
                     fixed(o.min_seconds, 2) + " s each, " +
                     (o.inflight_per_node > 0 ? std::to_string(o.inflight_per_node) + " per node"
                      : o.inflight > 0        ? std::to_string(o.inflight)
                                              : std::string("Offline: the planner's count")) +
                     " in flight");
  } catch (const std::exception& e) {
    std::cerr << "bench_" << family << "_scaling: error: " << e.what() << "\n";
    return 2;
  }
  add_context(s);
  register_all(s);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace dpushard::bench
