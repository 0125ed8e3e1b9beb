#include "published.hpp"

#include "dpushard/plan/strategy_table.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <vector>

#include "dpu_section.hpp"
#include "markdown.hpp"

namespace dpushard::report {
namespace {

std::string figure_text(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string largest_size_label(const FamilyAnalysis& fa) {
  return fa.sizes.empty() ? "none" : fa.sizes.back().label;
}

std::string joined_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

// "above 100M parameters": the swept 100M size counts (its parameter count lands within
// a fraction of a percent of 100M, either side).
bool at_least(double params, double min_params) { return params >= 0.99 * min_params; }

// The best Offline speedup on `nodes` nodes among models of `min_params` or more (rows kept
// out as measurement errors excluded), or null.
const Row* best_above(const FamilyAnalysis& fa, int nodes, double min_params) {
  const Row* best = nullptr;
  for (const auto& r : fa.rows)
    if (r.m.nodes == nodes && !r.m.failed && r.has_baseline && r.measurement_error.empty() &&
        at_least(r.m.params, min_params) && (!best || r.speedup > best->speedup))
      best = &r;
  return best;
}

// The planner's own prediction of a row's speedup: its predicted fps over the one-node
// plan's (0: not recorded).
double predicted_speedup(const FamilyAnalysis& fa, const Row& r) {
  const Row* base = fa.find(r.m.size, 1, "");
  if (!base || !(base->m.predicted_fps > 0) || !(r.m.predicted_fps > 0)) return 0;
  return r.m.predicted_fps / base->m.predicted_fps;
}

std::string best_text(const FamilyAnalysis& fa, const Row* best, bool efficiency,
                      const std::string& label) {
  if (!best)
    return fa.family + ": not measured (this run's largest size is " + largest_size_label(fa) + ")";
  const double v = efficiency ? 100 * best->efficiency : best->speedup;
  std::string text = fa.family + ": " + figure_text(v, efficiency ? 0 : 2) +
                     (efficiency ? " %" : "×") + " (" + best->m.size + ", " + best->m.strategy +
                     "; " + label;
  if (const double p = predicted_speedup(fa, *best); p > 0)
    text += "; the planner predicts " +
            (efficiency ? figure_text(100 * p / best->m.nodes, 0) + " %" : figure_text(p, 2) + "×");
  return text + ")";
}

// What dpushard's figure comes with, from the measurements of `r`: pipelining (frames in
// flight), int8 on the wire (bytes between nodes, and the float32 those tensors would be),
// the split (the busiest node's share of the compute) and the busiest node's time.
std::string components(const FamilyAnalysis& fa, const Row& r, double link_gbps) {
  std::vector<std::string> parts;
  const Measurement& m = r.m;
  if (m.inflight > 0)
    parts.push_back("pipelining: " + figure_text(m.inflight, 0) +
                    " frames in flight, so every node works on a frame at once");
  if (m.node_bytes_per_frame > 0) {
    std::string wire = "int8 on the wire: " + figure_text(m.node_bytes_per_frame / 1e3, 0) +
                       " kB between nodes per frame";
    if (link_gbps > 0)
      wire += " (" + figure_text(m.node_bytes_per_frame * 8 / (link_gbps * 1e9) * 1e3, 2) +
              " ms at " + figure_text(link_gbps, 0) + " Gbit/s; float32 would be 4× that)";
    parts.push_back(wire);
  } else if (strategy_is_baseline(m.strategy)) {
    parts.push_back("no tensor between nodes (" + m.strategy + ": whole copies)");
  }
  if (m.busiest_node_share > 0)
    parts.push_back("the split: the busiest node holds " +
                    figure_text(100 * m.busiest_node_share, 0) + " % of the compute (" +
                    figure_text(100.0 / m.nodes, 0) + " % is even), which caps efficiency at " +
                    figure_text(std::fmin(100.0, 100.0 / (m.nodes * m.busiest_node_share)), 0) +
                    " %");
  if (m.node_ms > 0 && m.fps > 0)
    parts.push_back("the busiest node busy " + figure_text(m.node_ms, 2) + " ms of each " +
                    figure_text(1000.0 / m.fps, 2) + " ms frame interval");
  return fa.family + " (" + m.size + ", " + m.strategy + "): " + joined_parts(parts);
}

// Where a break-even surely is (the upper end of its range: +inf for "> S") and the
// smallest size it may be (the lower end), by parameter count, to order strategies.
double upper_params(const BreakEven& be) {
  return be.kind == BreakEven::Kind::Never ? std::numeric_limits<double>::infinity()
                                           : be.size.params;
}
double lower_params(const BreakEven& be) { return be.noisy ? be.reach.params : upper_params(be); }

// The best break-even over the strategies on `nodes` nodes, with its strategy: the smallest
// size where N nodes surely pay off, then the smallest they may pay off from. A noisy "> S"
// counts (N nodes may pay off within the sizes measured); a firm one does not, nor "no gain"
// (a strategy that cannot beat one node in this scenario).
const BreakEven* best_break_even(const std::vector<BreakEven>& table, int nodes) {
  const BreakEven* best = nullptr;
  for (const auto& be : table)
    if (be.nodes == nodes &&
        (be.kind == BreakEven::Kind::Always || be.kind == BreakEven::Kind::From ||
         (be.kind == BreakEven::Kind::Never && be.noisy)) &&
        (!best || upper_params(be) < upper_params(*best) ||
         (upper_params(be) == upper_params(*best) && lower_params(be) < lower_params(*best))))
      best = &be;
  return best;
}

// The answer as the break-even table states it ("≈ 2M–5M (noise)" where noise decides),
// with its strategy; "> S" when no strategy pays off at any size measured.
std::string break_even_text(const std::vector<BreakEven>& table, int nodes) {
  const BreakEven* best = best_break_even(table, nodes);
  if (!best) {
    for (const auto& be : table)
      if (be.nodes == nodes && be.kind == BreakEven::Kind::Never) return break_even_answer(be);
    // Only strategies that cannot gain here (replicate with one frame in flight).
    for (const auto& be : table)
      if (be.nodes == nodes && be.kind == BreakEven::Kind::NoGain)
        return break_even_answer(be) + " (" + be.strategy + ")";
    return "not measured";
  }
  return break_even_answer(*best) + " (" + best->strategy + ")";
}

// Both break-evens of a family on `nodes` nodes, and the reason named from them: the
// throughput break-even has pipelining (Offline), the latency one has not (SingleStream).
std::string break_evens(const FamilyAnalysis& fa, int nodes, const std::string& label) {
  return fa.family + ": throughput (Offline) " + break_even_text(fa.throughput_break_even, nodes) +
         ", latency (SingleStream p50) " + break_even_text(fa.latency_break_even, nodes) + " (" +
         label + ")";
}

std::string break_even_reason(const FamilyAnalysis& fa, int nodes) {
  const BreakEven* t = best_break_even(fa.throughput_break_even, nodes);
  const BreakEven* l = best_break_even(fa.latency_break_even, nodes);
  if (!t && !l) return "";
  std::string text = fa.family + ": ";
  const std::string n = std::to_string(nodes) + " nodes";
  if (t && l && break_even_answer(*t) == break_even_answer(*l))
    text += "pipelining changes nothing here: " + n + " pay off from " + break_even_answer(*t) +
            " in both scenarios";
  else if (t && (!l || upper_params(*t) <= upper_params(*l)))
    text += "pipelining: with frames in flight (Offline) " + n + " pay off from " +
            break_even_answer(*t) + ", one frame alone (SingleStream) " +
            (l ? "from " + break_even_answer(*l) : std::string("not at the sizes measured"));
  else if (t)
    text += "pipelining gains nothing here: with frames in flight (Offline) " + n +
            " pay off from " + break_even_answer(*t) + ", one frame alone (SingleStream) from " +
            break_even_answer(*l);
  else
    text +=
        "one frame alone pays off from " + break_even_answer(*l) + ", the throughput at no size";
  // At the size where the throughput surely pays off: what crosses the wire.
  if (t && t->kind != BreakEven::Kind::Never)
    for (const auto& r : fa.rows)
      if (r.m.size == t->size.label && r.m.nodes == nodes && r.m.strategy == t->strategy &&
          !r.m.failed && r.m.node_bytes_per_frame > 0)
        text += "; at " + r.m.size + " " + r.m.strategy + " sends " +
                figure_text(r.m.node_bytes_per_frame / 1e3, 0) +
                " kB of int8 between nodes per frame";
  return text;
}

}  // namespace

std::string render_published_section(const Analysis& a, const std::optional<SlurmOverhead>& slurm) {
  const std::string label = a.modeled ? "modeled" : "measured";
  std::ostringstream md;
  md << "## Against the published KV260 cluster result\n\n"
     << "The published result this project exists to reproduce and beat, one row per figure, "
        "beside dpushard's figure from this run on the same metric (throughput: Offline; "
        "latency: SingleStream), each labelled modeled (the sim backend's timing model) or "
        "measured. This run's figures are **"
     << label
     << "**. The reason column names what dpushard's figure comes with, from this run's "
        "measurements (pipelining, int8 on the wire, the split, the busiest node's time); "
        "the published run's scenario, split and link are not known here, so which of these "
        "makes the difference is stated as unknown where it cannot be told.\n\n"
     << "| published figure | metric and scenario | dpushard, this run | reason for the "
        "difference |\n|---|---|---|---|\n";
  auto row = [&](const std::string& figure, const std::string& metric,
                 const std::vector<std::string>& ours, const std::string& reason) {
    md << "| " << figure << " | " << metric << " | " << joined_parts(ours) << " | " << reason
       << " |\n";
  };
  const std::string unknown_setup =
      "; the published run's scenario, split and link are unknown, so which of these makes "
      "the difference is unknown";
  std::vector<std::string> speedup, efficiency, why_best, be2, be3, why2, why3;
  for (const auto& fa : a.families) {
    const Row* best = best_above(fa, 3, 100e6);
    speedup.push_back(best_text(fa, best, false, label));
    efficiency.push_back(best_text(fa, best, true, label));
    if (best) why_best.push_back(components(fa, *best, a.link_gbps));
    be2.push_back(break_evens(fa, 2, label));
    be3.push_back(break_evens(fa, 3, label));
    if (auto w = break_even_reason(fa, 2); !w.empty()) why2.push_back(w);
    if (auto w = break_even_reason(fa, 3); !w.empty()) why3.push_back(w);
  }
  const auto reason = [&](const std::vector<std::string>& parts) {
    return parts.empty() ? std::string("unknown (not measured)")
                         : joined_parts(parts) + unknown_setup;
  };
  row("up to 1.93× on 3 nodes, models above 100M",
      "throughput speedup over one node, Offline (best strategy, 100M and up)", speedup,
      reason(why_best));
  row("64 % parallel efficiency on 3 nodes, models above 100M",
      "speedup / nodes, Offline (the same configuration)", efficiency, reason(why_best));
  row("distribution pays off above ~25M on 2 nodes",
      "break-even model size, best strategy: throughput (Offline) and latency (SingleStream p50)",
      be2, reason(why2));
  row("distribution pays off above ~100M on 3 nodes",
      "break-even model size, best strategy: throughput (Offline) and latency (SingleStream p50)",
      be3, reason(why3));
  // "DPU utilization" as the Vitis AI profiler reports it: the DPU's busy time over the
  // elapsed time. A range (86-97 %) fits a figure that varies with the node and the load;
  // a share of MACs or of one frame's time is a fixed property of the model or fragment.
  std::vector<std::string> dpu, dpu_reason;
  for (const auto& fa : a.families) {
    if (fa.family.rfind("convvit", 0) != 0) continue;
    const PublishedDpu p = published_dpu(fa, a.modeled);
    dpu.push_back(p.figure.empty() ? fa.family + ": not recorded (the plans carry no DPU times)"
                                   : p.figure);
    if (!p.reason.empty()) dpu_reason.push_back(p.reason);
  }
  if (dpu.empty()) dpu.push_back("not measured (no ConvViT in this run)");
  row("ConvViT at 86-97 % DPU utilization",
      "the DPU's busy share of the frame period (the Vitis AI profiler's \"DPU utilization\": "
      "busy time over elapsed time), Offline",
      dpu, dpu_reason.empty() ? "unknown" : joined_parts(dpu_reason));
  std::string slurm_text = "not a SLURM run (docs/slurm.md: `dpushard_scheduler: slurm`)";
  if (slurm && slurm->overhead_percent())
    slurm_text = figure_text(*slurm->overhead_percent(), 2) +
                 " % of the suites' wall time (measured: SLURM's own timestamps)";
  row("SLURM overhead 0.13 %", "SLURM's fixed cost per job / the suites' wall time", {slurm_text},
      slurm ? "unknown (the published job's length is not known; a fixed cost is a smaller "
              "share of a longer job)"
            : "—");
  md << "\nThe published figures are for comparison only: no parameter of dpushard (its "
        "timing model, its planner, its link) is fitted to them.\n\n";
  return md.str();
}

}  // namespace dpushard::report
