#include "analysis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/plan/strategy_table.hpp"

namespace dpushard::report {
namespace {

int strategy_rank(const std::string& s) {
  // The strategy table's order (dpushard/plan/strategy_table.hpp); names it lacks go last.
  const auto& table = strategy_table();
  const auto it = std::find_if(table.begin(), table.end(),
                               [&](const StrategyInfo& info) { return info.name == s; });
  return static_cast<int>(it - table.begin());
}

std::string suites_backend(const RunResults& results) {
  std::set<std::string> backends;
  for (const auto& suite : results.suites) {
    const std::string b = suite.get("backend");
    if (!b.empty()) backends.insert(b);
  }
  if (backends.empty() && results.env.is_object() && results.env.contains("backend") &&
      results.env["backend"].is_string())
    backends.insert(results.env["backend"].get<std::string>());
  if (backends.empty()) return "unknown";
  if (backends.size() > 1) return "mixed";
  return *backends.begin();
}

// "10M" -> 1e7: orders sizes whose measurement failed (and so has no parameter count).
double size_from_label(const std::string& label) {
  if (label.empty()) return 0;
  double scale = 1;
  switch (label.back()) {
    case 'K':
    case 'k':
      scale = 1e3;
      break;
    case 'M':
    case 'm':
      scale = 1e6;
      break;
    case 'G':
    case 'g':
      scale = 1e9;
      break;
    default:
      break;
  }
  try {
    return std::stod(scale == 1 ? label : label.substr(0, label.size() - 1)) * scale;
  } catch (const std::exception&) {
    return 0;
  }
}

// A data-parallel plan's SingleStream latency: one frame in flight runs whole on one node,
// so N nodes cannot beat one and the break-even rule's answer (a range over every size, as
// its speedups all read about 1.00×) would only restate noise. NoGain, with the speedups
// it read; NoData stays NoData.
BreakEven no_gain(const std::vector<const Row*>& series, double Row::*metric,
                  const BreakEven& measured) {
  BreakEven be;
  for (const Row* r : series)
    if (r && !r->m.failed && r->has_baseline && r->*metric > 0 && r->measurement_error.empty()) {
      be.read_lo = be.read_lo > 0 ? std::min(be.read_lo, r->*metric) : r->*metric;
      be.read_hi = std::max(be.read_hi, r->*metric);
    }
  if (be.read_hi <= 0) return measured;
  be.kind = BreakEven::Kind::NoGain;
  be.size = measured.size;
  be.at = measured.at;
  be.at_lo = measured.at_lo;
  be.at_hi = measured.at_hi;
  return be;
}

FamilyAnalysis analyze_family(const std::string& family, const std::vector<Measurement>& ms,
                              double min_gain, double noise_margin) {
  FamilyAnalysis fa;
  fa.family = family;

  std::map<std::string, double> size_params;  // label -> params (first seen)
  std::set<int> nodes;
  std::set<std::string> strategies;
  for (const auto& m : ms) {
    const auto it = size_params.emplace(m.size, m.failed ? 0.0 : m.params).first;
    if (!m.failed && !(it->second > 0)) it->second = m.params;
    nodes.insert(m.nodes);
    if (m.nodes > 1) strategies.insert(m.strategy);
  }
  for (const auto& [label, params] : size_params)
    fa.sizes.push_back({label, params > 0 ? params : size_from_label(label)});
  std::sort(fa.sizes.begin(), fa.sizes.end(),
            [](const Size& a, const Size& b) { return a.params < b.params; });
  fa.node_counts.assign(nodes.begin(), nodes.end());
  fa.strategies.assign(strategies.begin(), strategies.end());
  std::stable_sort(fa.strategies.begin(), fa.strategies.end(),
                   [](const std::string& a, const std::string& b) {
                     return strategy_rank(a) < strategy_rank(b);
                   });

  auto size_rank = [&](const std::string& label) {
    for (std::size_t i = 0; i < fa.sizes.size(); ++i)
      if (fa.sizes[i].label == label) return i;
    return fa.sizes.size();
  };
  // Throughput rows from Offline (or a run without scenarios); latency from SingleStream.
  std::map<std::tuple<std::string, int, std::string>, const Measurement*> single;
  for (const auto& m : ms)
    if (m.scenario == "SingleStream") {
      fa.scenarios = true;
      single.emplace(std::make_tuple(m.size, m.nodes, m.nodes == 1 ? "" : m.strategy), &m);
    }
  auto single_of = [&](const Measurement& m) -> const Measurement* {
    const auto it = single.find(std::make_tuple(m.size, m.nodes, m.nodes == 1 ? "" : m.strategy));
    return it == single.end() || it->second->failed ? nullptr : it->second;
  };
  std::map<std::string, const Measurement*> baselines;  // size -> 1-node measurement
  for (const auto& m : ms)
    if (m.nodes == 1 && !m.failed && m.scenario != "SingleStream" && m.scenario != "Server")
      baselines.emplace(m.size, &m);

  for (const auto& m : ms)
    if (m.scenario == "Server") fa.server.push_back(m);
  for (const auto& m : ms) {
    if (m.scenario == "SingleStream" || m.scenario == "Server") continue;
    Row row;
    row.m = m;
    const auto base = baselines.find(m.size);
    const Measurement* ss = single_of(m);
    const Measurement* ss_base = base != baselines.end() ? single_of(*base->second) : nullptr;
    if (ss) {
      row.has_single_stream = true;
      row.latency_scenario = "SingleStream";
      row.offline_p99_ms = m.p99_ms;
      row.m.p50_ms = ss->p50_ms;
      row.m.p90_ms = ss->p90_ms;
      row.m.p99_ms = ss->p99_ms;
    }
    if (!m.failed && base != baselines.end()) {
      const Measurement& b = *base->second;
      row.has_baseline = true;
      row.speedup = m.fps / b.fps;
      if (fa.scenarios)
        row.latency_speedup = (ss && ss_base && ss->p50_ms > 0 && ss_base->p50_ms > 0)
                                  ? ss_base->p50_ms / ss->p50_ms
                                  : 0;
      else
        row.latency_speedup = (m.p50_ms > 0 && b.p50_ms > 0) ? b.p50_ms / m.p50_ms : 0;
      row.efficiency = row.speedup / m.nodes;
      row.speedup_lo = b.fps_hi > 0 ? m.fps_lo / b.fps_hi : row.speedup;
      row.speedup_hi = b.fps_lo > 0 ? m.fps_hi / b.fps_lo : row.speedup;
      row.speedup_spread = m.fps_spread + b.fps_spread;
      if (ss && ss_base) row.latency_spread = ss->p50_spread + ss_base->p50_spread;
      row.baseline_bound_node_fps = b.bound_node_fps;
    }
    if (!m.failed && m.predicted_fps > 0) row.fit = m.fps / m.predicted_fps;
    if (!m.failed) row.measurement_error = measurement_error(row);
    fa.rows.push_back(std::move(row));
  }
  std::stable_sort(fa.rows.begin(), fa.rows.end(), [&](const Row& a, const Row& b) {
    const auto ka = std::make_tuple(size_rank(a.m.size), a.m.nodes, strategy_rank(a.m.strategy));
    const auto kb = std::make_tuple(size_rank(b.m.size), b.m.nodes, strategy_rank(b.m.strategy));
    return ka < kb;
  });

  for (auto& row : fa.rows) {
    if (row.m.failed || row.m.nodes == 1) continue;
    const Row* rep = fa.find(row.m.size, row.m.nodes, baseline_strategy());
    if (rep && !rep->m.failed && rep->m.fps > 0) row.vs_replicate = row.m.fps / rep->m.fps;
  }

  for (int n : fa.node_counts) {
    if (n == 1) continue;
    for (const auto& s : fa.strategies) {
      std::vector<const Row*> series;
      for (const auto& size : fa.sizes)
        if (const Row* r = fa.find(size.label, n, s)) series.push_back(r);
      // Not swept on this many nodes (a node count swept for a subset of the strategies,
      // the suites' --node-strategies): no break-even, rather than one without data.
      if (series.empty()) continue;
      BreakEven t = break_even(series, &Row::speedup, &Row::speedup_lo, &Row::speedup_hi, min_gain,
                               noise_margin, &Row::speedup_spread);
      BreakEven l = break_even(series, &Row::latency_speedup, nullptr, nullptr, min_gain,
                               noise_margin, &Row::latency_spread);
      if (!series.empty() &&
          std::all_of(series.begin(), series.end(), [](const Row* r) { return r->m.not_possible; }))
        t.kind = l.kind = BreakEven::Kind::NotPossible;
      else if (fa.scenarios && strategy_is_baseline(s))
        l = no_gain(series, &Row::latency_speedup, l);
      t.nodes = l.nodes = n;
      t.strategy = l.strategy = s;
      fa.throughput_break_even.push_back(t);
      fa.latency_break_even.push_back(l);
    }
  }
  return fa;
}

SuiteLoad suite_load(const SuiteContext& suite) {
  SuiteLoad l;
  l.suite = suite.file;
  try {
    const auto loads = nlohmann::json::parse(suite.get("load_avg", "[]"));
    if (loads.is_array() && !loads.empty() && loads[0].is_number()) l.load = loads[0].get<double>();
    l.cpus = std::stoi(suite.get("num_cpus", "0"));
  } catch (const std::exception&) {
    // A suite without these fields (or with odd ones) just has no load to report.
  }
  return l;
}

}  // namespace

const Row* FamilyAnalysis::find(const std::string& size, int nodes,
                                const std::string& strategy) const {
  for (const auto& r : rows)
    if (r.m.size == size && r.m.nodes == nodes && (nodes == 1 || r.m.strategy == strategy))
      return &r;
  return nullptr;
}

// The backend's descriptor (dpushard/exec/backend.hpp): every built-in backend, and vart's
// description on a host without VART, so that results from a board are labelled too.
namespace {
std::shared_ptr<const BackendDescriptor> descriptor_of(const std::string& backend) {
  register_builtin_backends();  // idempotent: the report may run without the CLI's main()
  return find_backend(backend);
}
}  // namespace

bool backend_is_modeled(const std::string& backend) {
  const auto d = descriptor_of(backend);
  return d && d->traits.models_time;
}

std::string timing_label(const std::string& backend) {
  const auto d = descriptor_of(backend);
  if (!d) return "backend " + backend;
  switch (d->traits.device) {
    case DeviceKind::ModeledDpu:
      return backend +
             " backend: each node takes the KV260 timing model's time per fragment; the "
             "tensors really travel between the worker processes";
    case DeviceKind::Dpu:
      return backend + " backend: the KV260 DPU";
    case DeviceKind::HostCpu:
      break;
  }
  return backend + " backend on the host CPU, not a DPU";
}

BreakEven break_even(const std::vector<const Row*>& rows_by_size, double Row::*metric,
                     double Row::*lower, double Row::*upper, double min_gain, double noise_margin,
                     double Row::*own_spread) {
  BreakEven be;
  std::vector<const Row*> usable;
  for (const Row* r : rows_by_size)
    if (r && !r->m.failed && r->has_baseline && r->*metric > 0 && r->measurement_error.empty())
      usable.push_back(r);
  if (usable.empty()) return be;  // NoData

  // Each row's interval: its value within a factor of (1 + the noise margin) either way (the
  // spread between two runs, which a run's own repetitions do not see), widened to the
  // repetitions' 95 % interval where that is wider. Symmetric about the threshold: a speedup
  // within the factor of it on either side straddles it, so two runs whose readings differ
  // by less than the margin both mark a size they read on opposite sides of it. The run's
  // own spread of the measurement (its halves apart) takes the margin's place where it is
  // larger: a load that came or went while it was measured makes it no firmer than it is.
  // Not on top of the margin: the margin, measured between runs, already holds a quiet
  // run's own spread, and adding that (a few percent, itself noisy) would move the band's
  // edges from run to run.
  const double threshold = 1.0 + min_gain;
  struct Interval {
    double lo, hi;
  };
  auto spread_of = [&](const Row* r) {
    return own_spread != nullptr && r->*own_spread > 0 ? r->*own_spread : 0.0;
  };
  auto interval = [&](const Row* r) {
    const double v = r->*metric;
    const double factor = 1 + std::max(noise_margin, spread_of(r));
    Interval i{v / factor, v * factor};
    if (lower != nullptr && r->*lower > 0) i.lo = std::min(i.lo, r->*lower);
    if (upper != nullptr && r->*upper > 0) i.hi = std::max(i.hi, r->*upper);
    return i;
  };
  auto beats = [&](const Row* r) { return interval(r).lo > threshold; };
  auto straddles = [&](const Row* r) {
    const Interval i = interval(r);
    return !(i.lo > threshold) && i.hi > threshold;
  };
  // Walk down from the largest size while N nodes still beat one, the whole interval above
  // the threshold.
  std::size_t first = usable.size();
  while (first > 0 && beats(usable[first - 1])) --first;
  // Where an interval that straddles stopped the walk, noise decides the cell: walk on
  // through straddling and winning rows to see how far down it could go.
  std::size_t reach = first;
  while (reach > 0 && (beats(usable[reach - 1]) || straddles(usable[reach - 1]))) {
    if (straddles(usable[reach - 1])) {
      const Interval i = interval(usable[reach - 1]);
      be.straddling.insert(
          be.straddling.begin(),
          {usable[reach - 1]->m.size, usable[reach - 1]->*metric, i.lo, i.hi,
           spread_of(usable[reach - 1]) > noise_margin ? spread_of(usable[reach - 1]) : 0.0});
    }
    --reach;
  }
  if (!be.straddling.empty()) {
    be.noisy = true;
    be.reach = {usable[reach]->m.size, usable[reach]->m.params};
    be.reach_smallest = reach == 0;
  }
  if (first == usable.size()) {
    be.kind = BreakEven::Kind::Never;
    first = usable.size() - 1;
  } else {
    be.kind = first == 0 ? BreakEven::Kind::Always : BreakEven::Kind::From;
  }
  be.size = {usable[first]->m.size, usable[first]->m.params};
  be.at = usable[first]->*metric;
  be.at_lo = lower != nullptr && usable[first]->*lower > 0 ? usable[first]->*lower : be.at;
  be.at_hi = upper != nullptr && usable[first]->*upper > 0 ? usable[first]->*upper : be.at;
  return be;
}

std::string link_label(const std::string& emulation, const std::string& gbps,
                       const std::string& latency_us, bool loopback) {
  if (emulation == "paced") {
    std::string rate = gbps;
    try {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", std::stod(gbps));
      rate = buf;
    } catch (const std::exception&) {
    }
    std::string label = "emulated " + rate + " Gbit/s (paced)";
    if (!latency_us.empty() && latency_us != "0") label += ", " + latency_us + " us one way";
    return label;
  }
  if (emulation == "off") return loopback ? "unshaped (loopback)" : "unshaped (the real network)";
  return gbps.empty() ? "unknown" : gbps + " Gbit/s (not recorded whether it was emulated)";
}

std::string measurement_error(const Row& row) {
  const Measurement& m = row.m;
  if (m.failed || !(m.fps > 0)) return "";
  char buf[640];
  struct Bound {
    double fps;
    const char* what;
  };
  // The node bound is busy time, not waiting: a fragment's plan compute_ms is the timing
  // model's worker_ms, max(DPU + A53, network thread) for one frame, and a sim worker never
  // starts a fragment's frame before the modeled end of its previous one.
  const Bound bounds[] = {
      {m.bound_node_fps,
       "its busiest node allows (its slowest fragment's modeled busy time per frame: DPU and "
       "A53, or its network thread when longer; or the DPU time of every fragment one board "
       "holds, which share its DPU; no waiting counted)"},
      {m.bound_link_fps,
       "its busiest node's port allows (its bytes per frame at the link's goodput)"},
      {m.bound_port_fps, "the head node's port allows (inputs and outputs at the link's goodput)"}};
  const Bound* tightest = nullptr;
  for (const Bound& b : bounds)
    if (b.fps > 0 && (!tightest || b.fps < tightest->fps)) tightest = &b;
  // The whole run's rate counts the fill too, so it cannot be above what the plan can do:
  // within the bound, it says the steady window's ends are off, not the plan.
  auto whole_run = [&](double limit) -> std::string {
    if (!(m.span_fps > 0)) return "";
    char text[200];
    std::snprintf(text, sizeof text, "; the whole run's rate, its fill included, is %.1f fps%s",
                  m.span_fps,
                  m.span_fps <= limit * (1 + kBoundTolerance)
                      ? ", within it: the steady window began or ended out of step with the "
                        "work it counted"
                      : ", above it too");
    return text;
  };
  if (tightest && m.fps > tightest->fps * (1 + kBoundTolerance)) {
    std::snprintf(buf, sizeof buf,
                  "%.1f fps measured, %.0f %% above the %.1f fps %s: the rate counted frames "
                  "its timed span did not pay for",
                  m.fps, 100 * (m.fps / tightest->fps - 1), tightest->fps, tightest->what);
    return buf + whole_run(tightest->fps);
  }
  const bool bounds_known = m.bound_node_fps > 0 && row.baseline_bound_node_fps > 0;
  if (m.nodes > 1 && row.has_baseline && !bounds_known &&
      row.efficiency > 1 + kEfficiencyTolerance) {
    std::snprintf(buf, sizeof buf,
                  "%.0f %% parallel efficiency: %d nodes cannot do more than %d times one "
                  "node's work (%.2fx measured); the rate or the one-node baseline is off",
                  100 * row.efficiency, m.nodes, m.nodes, row.speedup);
    // N times the one-node rate is the limit the whole run's rate is held to.
    return buf + whole_run(m.fps / row.speedup * m.nodes);
  }
  return "";
}

LatencyBoundVerdict latency_bound_verdict(const Measurement& m) {
  LatencyBoundVerdict v;
  const double bound = m.plan_max_latency_ms;
  if (m.failed || !(bound > 0)) return v;
  char buf[256];
  if (m.fps > 0) {
    const bool met = m.p99_ms <= bound;
    v.kind = met ? LatencyBoundVerdict::Kind::Met : LatencyBoundVerdict::Kind::Missed;
    std::snprintf(buf, sizeof buf, "%s: p99 %.1f ms %s %.1f ms at %.1f fps", met ? "met" : "missed",
                  m.p99_ms, met ? "≤" : ">", bound, m.fps);
  } else if (m.latency_bound_ms > 0 && m.latency_bound_ms >= bound) {
    // No rate kept p99 under Server's bound, which is at least the planner's.
    v.kind = LatencyBoundVerdict::Kind::Missed;
    std::snprintf(buf, sizeof buf, "missed: no rate tried kept p99 under %.1f ms (≥ %.1f ms)",
                  m.latency_bound_ms, bound);
  } else {
    v.kind = LatencyBoundVerdict::Kind::Unknown;
    std::snprintf(buf, sizeof buf,
                  "unknown: no rate met Server's tighter %.1f ms bound; the planner's is %.1f ms",
                  m.latency_bound_ms, bound);
  }
  v.text = buf;
  return v;
}

std::string fit_cause(const Measurement& m, double link_gbps) {
  if (m.failed || !(m.predicted_fps > 0) || !(m.fps > 0)) return "";
  const double interval = 1000.0 / m.fps;  // measured ms per frame
  const double predicted = 1000.0 / m.predicted_fps;
  char buf[256];
  std::vector<std::string> causes;
  // The busiest node's backend time (for sim: the modeled time it waited) against the
  // plan's compute on that node.
  if (m.node_ms > 0 && m.predicted_node_ms > 0 && m.node_ms > 1.05 * m.predicted_node_ms) {
    std::snprintf(buf, sizeof buf,
                  "the busiest node's backend takes %.2f ms per frame, the plan predicts %.2f ms "
                  "of compute there",
                  m.node_ms, m.predicted_node_ms);
    causes.push_back(buf);
  }
  // Nodes idle while frames wait: orchestration or the in-flight window.
  if (m.node_ms > 0 && interval > 1.10 * m.node_ms &&
      !(m.link_paced > 0.5 && link_gbps > 0 &&
        m.node_tx_bytes * 8 / (link_gbps * 1e9) * 1e3 > 0.9 * interval)) {
    std::snprintf(buf, sizeof buf,
                  "the busiest node is busy %.2f ms of each %.2f ms frame interval (idle %.0f %%: "
                  "orchestration or the in-flight window)",
                  m.node_ms, interval, 100.0 * (1 - m.node_ms / interval));
    causes.push_back(buf);
  }
  if (m.worker_cpu_ms > 0.25 * interval) {
    std::snprintf(buf, sizeof buf,
                  "the workers' own CPU time on this machine is %.2f ms per frame (%.0f %% of the "
                  "interval) and can leak into the measurement",
                  m.worker_cpu_ms, 100.0 * m.worker_cpu_ms / interval);
    causes.push_back(buf);
  }
  if (m.orchestrator_cpu_ms > 0.25 * interval) {
    std::snprintf(buf, sizeof buf,
                  "orchestration on the head node costs %.2f ms of CPU per frame (%.0f %% of the "
                  "interval)",
                  m.orchestrator_cpu_ms, 100.0 * m.orchestrator_cpu_ms / interval);
    causes.push_back(buf);
  }
  if (link_gbps > 0 && m.node_tx_bytes > 0) {
    const double link_ms = m.node_tx_bytes * 8 / (link_gbps * 1e9) * 1e3;
    if (m.link_paced == 0 && m.fps > m.predicted_fps && link_ms > 0.5 * predicted) {
      std::snprintf(buf, sizeof buf,
                    "the link is unshaped: the busiest port's %.2f ms per frame at %g Gbit/s, "
                    "which the plan counts, is not spent",
                    link_ms, link_gbps);
      causes.push_back(buf);
    } else if (m.link_paced > 0.5 && link_ms > 0.9 * interval) {
      std::snprintf(buf, sizeof buf, "the link: the busiest port sends %.2f ms per frame", link_ms);
      causes.push_back(buf);
    }
  }
  std::string out;
  for (const auto& c : causes) out += (out.empty() ? "" : "; ") + c;
  return out;
}

Analysis analyze(const RunResults& results, const AnalysisOptions& options) {
  if (!(options.min_gain >= 0 && options.min_gain < 1))
    throw Error("the minimum gain must lie in [0, 1), got " + std::to_string(options.min_gain));
  if (!(options.noise_margin >= 0 && options.noise_margin < 0.5))
    throw Error("the noise margin must lie in [0, 0.5), got " +
                std::to_string(options.noise_margin));
  Analysis a;
  a.min_gain = options.min_gain;
  a.noise_margin = options.noise_margin;
  for (const auto& suite : results.suites) a.loads.push_back(suite_load(suite));
  a.backend = suites_backend(results);
  a.modeled = backend_is_modeled(a.backend);
  a.timing_label = timing_label(a.backend);
  {
    std::set<std::string> objectives;
    for (const auto& suite : results.suites)
      if (const std::string o = suite.get("objective"); !o.empty()) objectives.insert(o);
    if (objectives.size() == 1)
      a.objective = *objectives.begin();
    else if (objectives.size() > 1)
      a.objective = "mixed";
  }
  {
    std::set<std::string> emulation, gbps, latency;
    bool loopback = true;
    for (const auto& suite : results.suites) {
      emulation.insert(suite.get("link_emulation"));
      gbps.insert(suite.get("link_gbps"));
      latency.insert(suite.get("link_latency_us"));
    }
    if (results.env.is_object() && results.env.contains("hosts") &&
        results.env["hosts"].is_object())
      for (const auto& [name, h] : results.env["hosts"].items())
        if (h.is_object() && h.value("role", "") != "head" && h.contains("address") &&
            h["address"].is_string()) {
          const std::string address = h["address"].get<std::string>();
          if (address.rfind("127.", 0) != 0 && address != "localhost" && address != "::1")
            loopback = false;
        }
    const auto one = [](const std::set<std::string>& v) {
      return v.size() == 1 ? *v.begin() : std::string();
    };
    a.link_label = emulation.size() == 1
                       ? link_label(one(emulation), one(gbps), one(latency), loopback)
                       : "mixed";
    try {
      a.link_gbps = one(gbps).empty() ? 0 : std::stod(one(gbps));
    } catch (const std::exception&) {
      a.link_gbps = 0;
    }
  }

  std::vector<std::string> order;
  std::map<std::string, std::vector<Measurement>> by_family;
  for (const auto& m : results.measurements) {
    if (m.failed && !m.not_possible) a.failed.push_back(m);
    if (!by_family.contains(m.family)) order.push_back(m.family);
    by_family[m.family].push_back(m);
  }
  for (const auto& family : order)
    a.families.push_back(
        analyze_family(family, by_family[family], options.min_gain, options.noise_margin));
  for (auto& fa : a.families)
    for (auto& row : fa.rows)
      if (row.fit > 0 && std::fabs(row.fit - 1) > kFitTolerance)
        row.cause = fit_cause(row.m, a.link_gbps);
  return a;
}

}  // namespace dpushard::report
