#include "published.hpp"

#include <cstdio>

#include <sstream>
#include <vector>
#include "dpu_section.hpp"

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

// The best Offline speedup on `nodes` nodes among models above `min_params` (rows kept out
// as measurement errors excluded), or why there is none.
std::string best_above(const FamilyAnalysis& fa, int nodes, double min_params, bool efficiency) {
  const Row* best = nullptr;
  for (const auto& r : fa.rows)
    if (r.m.nodes == nodes && !r.m.failed && r.has_baseline && r.measurement_error.empty() &&
        r.m.params > min_params && (!best || r.speedup > best->speedup))
      best = &r;
  if (!best)
    return fa.family + ": not measured (this run's largest size is " + largest_size_label(fa) + ")";
  const double v = efficiency ? 100 * best->efficiency : best->speedup;
  return fa.family + ": " + figure_text(v, efficiency ? 0 : 2) + (efficiency ? " %" : "×") + " (" +
         best->m.size + ", " + best->m.strategy + ")";
}

// The smallest break-even over the strategies on `nodes` nodes, with its strategy.
std::string best_break_even(const FamilyAnalysis& fa, const std::vector<BreakEven>& table,
                            int nodes) {
  const BreakEven* best = nullptr;
  for (const auto& be : table)
    if (be.nodes == nodes &&
        (be.kind == BreakEven::Kind::Always || be.kind == BreakEven::Kind::From) &&
        (!best || be.size.params < best->size.params))
      best = &be;
  if (!best) {
    for (const auto& be : table)
      if (be.nodes == nodes && be.kind == BreakEven::Kind::Never)
        return fa.family + ": > " + be.size.label;
    return fa.family + ": not measured";
  }
  return fa.family + ": " + std::string(best->noisy ? "≈ " : "") +
         std::string(best->kind == BreakEven::Kind::Always ? "≤ " : "") + best->size.label +
         (best->noisy ? " (noise: as low as " + best->reach.label + ")" : "") + " (" +
         best->strategy + ")";
}

std::string joined_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

std::string render_published_section(const Analysis& a, const std::optional<SlurmOverhead>& slurm) {
  std::ostringstream md;
  md << "## Against the published KV260 cluster result\n\n"
     << "The published result this project exists to reproduce and beat, one row per figure, "
        "beside dpushard's figure from this run on the same metric (throughput: Offline; "
        "latency: SingleStream). Times here are "
     << (a.modeled ? "modeled" : "measured")
     << ". A reason is given where the measurements name one, else \"unknown\".\n\n"
     << "| published figure | metric and scenario | dpushard, this run | reason for the "
        "difference |\n|---|---|---|---|\n";
  auto row = [&](const std::string& figure, const std::string& metric,
                 const std::vector<std::string>& ours, const std::string& reason) {
    md << "| " << figure << " | " << metric << " | " << joined_parts(ours) << " | " << reason
       << " |\n";
  };
  std::vector<std::string> speedup, efficiency, be2, be3, lat2, lat3;
  for (const auto& fa : a.families) {
    speedup.push_back(best_above(fa, 3, 100e6, false));
    efficiency.push_back(best_above(fa, 3, 100e6, true));
    be2.push_back(best_break_even(fa, fa.throughput_break_even, 2));
    be3.push_back(best_break_even(fa, fa.throughput_break_even, 3));
    lat2.push_back(best_break_even(fa, fa.latency_break_even, 2));
    lat3.push_back(best_break_even(fa, fa.latency_break_even, 3));
  }
  const std::string unknown =
      "unknown (the published setup's scenario, split and link are not known here)";
  row("up to 1.93× on 3 nodes, models above 100M", "throughput speedup over one node, Offline",
      speedup, unknown);
  row("64 % parallel efficiency on 3 nodes, models above 100M", "speedup / nodes, Offline",
      efficiency, unknown);
  row("distribution pays off above ~25M on 2 nodes",
      "throughput break-even (Offline), best strategy", be2, unknown);
  row("distribution pays off above ~25M on 2 nodes",
      "latency break-even (SingleStream p50), best strategy", lat2, unknown);
  row("distribution pays off above ~100M on 3 nodes",
      "throughput break-even (Offline), best strategy", be3, unknown);
  row("distribution pays off above ~100M on 3 nodes",
      "latency break-even (SingleStream p50), best strategy", lat3, unknown);
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
    slurm_text = figure_text(*slurm->overhead_percent(), 2) + " % of the suites' wall time";
  row("SLURM overhead 0.13 %", "SLURM's fixed cost per job / the suites' wall time", {slurm_text},
      slurm ? "unknown" : "—");
  md << "\nThe published figures are for comparison only: no parameter of dpushard (its "
        "timing model, its planner, its link) is fitted to them.\n\n";
  return md.str();
}

}  // namespace dpushard::report
