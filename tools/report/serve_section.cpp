#include "serve_section.hpp"

#include <cstdio>
#include <sstream>

namespace dpushard::report {
namespace {

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string ms_pair(double p50, double p99) { return num(p50, 2) + " / " + num(p99, 2); }

// The suite's Server row of the configuration a search served (same size, nodes, strategy).
const Measurement* in_process_row(const FamilyAnalysis& fa, const ServeSearch& s) {
  for (const auto& m : fa.server)
    if (m.size == s.size && m.nodes == s.nodes && m.strategy == s.strategy) return &m;
  return nullptr;
}

}  // namespace

std::string render_serve_section(const FamilyAnalysis& fa, const std::vector<ServeSearch>& serve) {
  std::vector<const ServeSearch*> mine;
  for (const auto& s : serve)
    if (s.family == fa.family) mine.push_back(&s);
  if (mine.empty()) return "";
  std::ostringstream md;
  md << "#### Server through `dpushard serve`\n\n"
     << "The same search through `dpushard serve PLAN --cluster` on the head node (the Open "
        "Inference Protocol over HTTP on 127.0.0.1, binary tensors, a bearer token; "
        "`bench_serve_load --search`, the sweep role's `sweep_serve_sizes`): the highest "
        "Poisson rate whose p99, from each request's arrival to its response, stays under the "
        "in-process search's bound, between 0 and the same Offline rate, on the same plan and "
        "workers. **Overhead per request**: serve's p50 / p99 with requests arriving at the "
        "in-process Server rate, minus the in-process orchestrator's at that rate (HTTP, JSON "
        "header, serve's queue and the hand-off to the orchestrator's stream).";
  std::string timing_only;  // a backend that only times its frames (sim), if the workers ran one
  for (const ServeSearch* s : mine)
    if (backend_is_modeled(s->backend)) timing_only = s->backend;
  if (!timing_only.empty())
    md << " The workers run `" << timing_only
       << "`: serve ran with `--timing-only`, its answers the zeros of "
          "outputs the workers only timed (marked `\"computed\": false`).";
  md << "\n\n"
     << "| size | nodes | strategy | p99 bound ms | in-process fps | its p50 / p99 ms | serve fps "
        "| its p50 / p99 ms | serve / in-process | failed requests | serve at the in-process "
        "rate: p50 / p99 ms | overhead per request p50 / p99 ms |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const ServeSearch* s : mine) {
    const Measurement* m = in_process_row(fa, *s);
    const bool in_process = m && !m->failed;
    std::string strategy = s->strategy;
    if (!s->plan_label.empty() && s->plan_label != s->strategy) strategy += ": " + s->plan_label;
    md << "| " << s->size << " | " << s->nodes << " | " << strategy << " | " << num(s->bound_ms, 1)
       << " | ";
    if (in_process)
      md << (m->fps > 0 ? num(m->fps, 1) : "none met it") << " | "
         << (m->fps > 0 ? ms_pair(m->p50_ms, m->p99_ms) : "—") << " | ";
    else
      md << "— (no in-process Server row) | — | ";
    md << (s->rate > 0 ? num(s->rate, 1) : "none met it") << " | "
       << (s->rate > 0 ? ms_pair(s->p50_ms, s->p99_ms) : "—") << " | "
       << (in_process && m->fps > 0 && s->rate > 0 ? num(s->rate / m->fps, 2) : "—") << " | "
       << num(s->failed + s->at_failed, 0) << " | ";
    const bool at_ok = s->at_rate_measured && s->at_p50_ms >= 0 && s->at_p99_ms >= 0;
    if (at_ok)
      md << ms_pair(s->at_p50_ms, s->at_p99_ms) << " at " << num(s->at_rate, 1) << "/s";
    else
      md << "—";
    md << " | ";
    if (at_ok && in_process && m->fps > 0)
      md << ms_pair(s->at_p50_ms - m->p50_ms, s->at_p99_ms - m->p99_ms);
    else
      md << "—";
    md << " |\n";
  }
  md << "\n";
  return md.str();
}

}  // namespace dpushard::report
