#include "dpu_section.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

namespace dpushard::report {
namespace {

std::string pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f %%", 100 * share);
  return buf;
}

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", v);
  return buf;
}

bool has_dpu(const Row& r) { return !r.m.failed && r.m.dpu_ms > 0 && r.m.fps > 0; }

}  // namespace

double dpu_busy_mean(const Measurement& m) {
  return m.dpu_ms > 0 && m.nodes > 0 ? m.dpu_ms * m.fps / (1000.0 * m.nodes) : 0.0;
}

double dpu_busy_busiest(const Measurement& m) {
  return m.busiest_dpu_ms > 0 ? m.busiest_dpu_ms * m.fps / 1000.0 : 0.0;
}

std::string render_dpu_section(const FamilyAnalysis& fa, bool modeled) {
  std::ostringstream md;
  md << "### DPU utilization\n\n";
  if (std::none_of(fa.rows.begin(), fa.rows.end(), has_dpu)) {
    md << "Not recorded: these plans carry no DPU utilization (made before plan.yaml recorded "
          "it, or priced by a model other than the timing model); `dpushard predict <plan "
          "folder>` gives it per fragment.\n\n";
    return md.str();
  }
  md << "Three figures (docs/perf.md \"DPU utilization\"). **MACs on the DPU**: the share of "
        "the model's ops' MACs the timing model places on the DPU; **time on the DPU**: the "
        "share of one frame's time alone (DPU, CPU ops and host work on the A53, TCP) spent "
        "on the DPU. Both are modeled, from the plan, each fragment once. **DPU busy**: the "
        "DPU's share of the frame period"
     << (fa.scenarios ? " in Offline" : "")
     << ", the plan's modeled DPU ms of a frame on a node times this run's rate ("
     << (modeled ? "modeled" : "measured")
     << "): the mean over the nodes, and on the busiest node. Per fragment: MACs / time on "
        "the DPU. ⚠: a measurement error above, its DPU busy no truer than its rate.\n\n"
     << "| size | nodes | strategy | MACs on the DPU | time on the DPU | DPU busy, mean "
        "over nodes | DPU busy, busiest node | fragments: MACs / time on the DPU |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : fa.rows) {
    if (!has_dpu(r)) continue;
    const Measurement& m = r.m;
    std::string fragments;
    if (m.fragment_dpu.size() > 1)
      for (const auto& f : m.fragment_dpu)
        fragments += (fragments.empty() ? "" : "; ") + f.name + " " + pct(f.mac_share) + " / " +
                     pct(f.time_share);
    const std::string mark = r.measurement_error.empty() ? "" : " ⚠";
    md << "| " << m.size << " | " << m.nodes << " | " << (m.nodes == 1 ? "—" : m.strategy) << " | "
       << pct(m.dpu_mac_share) << " | " << pct(m.dpu_time_share) << " | " << pct(dpu_busy_mean(m))
       << mark << " | " << pct(dpu_busy_busiest(m)) << mark << " | "
       << (fragments.empty() ? "—" : fragments) << " |\n";
  }
  md << "\n";
  return md.str();
}

PublishedDpu published_dpu(const FamilyAnalysis& fa, bool modeled) {
  PublishedDpu out;
  const Row* low = nullptr;   // the lowest mean busy share
  const Row* high = nullptr;  // the highest busiest-node share
  for (const auto& r : fa.rows) {
    if (!has_dpu(r) || r.m.nodes < 2 || !r.measurement_error.empty() || r.m.busiest_dpu_ms <= 0)
      continue;
    if (!low || dpu_busy_mean(r.m) < dpu_busy_mean(low->m)) low = &r;
    if (!high || dpu_busy_busiest(r.m) > dpu_busy_busiest(high->m)) high = &r;
  }
  if (!low || !high) return out;
  const Row* model = nullptr;  // the whole model's shares: one node at the largest size
  for (const auto& r : fa.rows)
    if (has_dpu(r) && r.m.nodes == 1) model = &r;
  const std::string label = modeled ? "modeled" : "modeled DPU time, measured rate";
  out.figure = fa.family + ": DPU busy " + pct(dpu_busy_mean(low->m)) + "-" +
               pct(dpu_busy_busiest(high->m)) + " of the frame period (" + label +
               "; Offline on 2+ nodes, from " + low->m.size + " " + low->m.strategy + " on " +
               std::to_string(low->m.nodes) + ", mean over nodes, to " + high->m.size + " " +
               high->m.strategy + " on " + std::to_string(high->m.nodes) + ", busiest node)";
  if (model)
    out.figure += "; the model (" + model->m.size + "): " + pct(model->m.dpu_mac_share) +
                  " of its MACs, " + pct(model->m.dpu_time_share) + " of a frame's time on the DPU";
  // The rest of the busiest node's frame interval, from its measured backend time.
  const Measurement& h = high->m;
  const double interval = 1000.0 / h.fps;
  if (h.node_ms > 0) {
    const double other = std::max(0.0, h.node_ms - h.busiest_dpu_ms);
    const double idle = std::max(0.0, interval - std::max(h.node_ms, h.busiest_dpu_ms));
    out.reason = fa.family + " (" + h.size + " " + h.strategy + " on " + std::to_string(h.nodes) +
                 "): of the busiest node's " + ms(interval) + " frame interval, the DPU " +
                 ms(h.busiest_dpu_ms) + ", other backend work (CPU ops and host work on the A53) " +
                 ms(other) + ", idle " + ms(idle) +
                 " (the link, orchestration, waiting on other nodes); the published run's own "
                 "split of its frame is unknown";
  } else {
    out.reason = fa.family + ": the busiest node's time per frame was not recorded; unknown";
  }
  return out;
}

}  // namespace dpushard::report
