#include "markdown.hpp"

#include "dpushard/plan/strategy_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "dpu_section.hpp"
#include "figures.hpp"
#include "published.hpp"
#include "serve_section.hpp"

namespace dpushard::report {
namespace {

using nlohmann::json;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Three significant digits, no exponent for the ranges a report shows.
std::string sig3(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  return fixed(v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
}

std::string count(double v) {  // 10'123'456 -> "10.1M"
  const char* suffix = "";
  double x = v;
  if (std::fabs(x) >= 1e9) {
    x /= 1e9;
    suffix = "G";
  } else if (std::fabs(x) >= 1e6) {
    x /= 1e6;
    suffix = "M";
  } else if (std::fabs(x) >= 1e3) {
    x /= 1e3;
    suffix = "K";
  }
  return sig3(x) + suffix;
}

// "1.27× [1.25, 1.29]": a speedup with its interval (none with one repetition).
std::string speedup_text(double at, double lo, double hi) {
  std::string text = fixed(at, 2) + "×";
  if (hi > lo) text += " [" + fixed(lo, 2) + ", " + fixed(hi, 2) + "]";
  return text;
}

// "5 %", "0 %": the minimum gain a break-even needs.
std::string percent_text(double fraction) { return fixed(100 * fraction, 0) + " %"; }

// "1.05×": the speedup a break-even's interval must lie above.
std::string speedup_threshold_text(double min_gain) { return fixed(1 + min_gain, 2) + "×"; }

std::string bytes(double v) {
  if (v >= 1e6) return sig3(v / 1e6) + " MB";
  if (v >= 1e3) return sig3(v / 1e3) + " kB";
  return fixed(v, 0) + " B";
}

std::string json_text(const json& j, const char* key, const std::string& fallback = "") {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return fallback;
  return v.dump();
}

// A value all suites agree on (from their context), else env.json's, else the fallback.
std::string run_value(const RunResults& r, const std::string& key, const std::string& fallback) {
  std::set<std::string> seen;
  for (const auto& s : r.suites)
    if (auto v = s.get(key); !v.empty()) seen.insert(v);
  if (seen.size() == 1) return *seen.begin();
  if (seen.size() > 1) {
    std::string all;
    for (const auto& v : seen) all += (all.empty() ? "" : ", ") + v;
    return all;
  }
  return json_text(r.env, key.c_str(), fallback);
}

// The strategy as the tables show it: the plan where it says more ("hybrid 2x experts",
// "auto: experts"), and ★ on the planner's choice.
std::string strategy_text(const Measurement& m) {
  std::string text = m.strategy;
  if (!m.plan_label.empty() && m.plan_label != m.strategy && m.nodes > 1 && !m.not_possible)
    text = strategy_is_composite(m.strategy) ? m.plan_label : m.strategy + ": " + m.plan_label;
  if (m.planner_choice) text += " ★";
  return text;
}

// A plan that is not possible is one short cell with a footnote mark: its reason (the
// planner's sentence) once per family under the table, not on every row.
std::vector<std::string> not_possible_reasons(const FamilyAnalysis& fa) {
  std::vector<std::string> reasons;
  for (const auto& r : fa.rows)
    if (r.m.not_possible && std::find(reasons.begin(), reasons.end(), r.m.error) == reasons.end())
      reasons.push_back(r.m.error);
  for (const auto& m : fa.server)
    if (m.not_possible && std::find(reasons.begin(), reasons.end(), m.error) == reasons.end())
      reasons.push_back(m.error);
  return reasons;
}

std::string superscript(std::size_t n) {
  static const char* const kDigits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  std::string out;
  for (const char c : std::to_string(n)) out += kDigits[c - '0'];
  return out;
}

std::string not_possible_cell(const FamilyAnalysis& fa, const Measurement& m) {
  const auto reasons = not_possible_reasons(fa);
  const auto it = std::find(reasons.begin(), reasons.end(), m.error);
  return "not possible" + (it == reasons.end()
                               ? std::string()
                               : superscript(1 + static_cast<std::size_t>(it - reasons.begin())));
}

void not_possible_notes(std::ostringstream& md, const FamilyAnalysis& fa) {
  const auto reasons = not_possible_reasons(fa);
  for (std::size_t i = 0; i < reasons.size(); ++i)
    md << superscript(i + 1) << " Not possible: " << reasons[i] << "\n\n";
}

std::string host_line(const std::string& name, const json& h) {
  std::ostringstream out;
  out << name << " (" << json_text(h, "hostname", "?") << "): " << json_text(h, "cpu", "?") << ", "
      << json_text(h, "cores", "?") << " cores, " << sig3(h.value("memory_mb", 0.0) / 1024.0)
      << " GiB, " << json_text(h, "os", "?") << ", " << json_text(h, "architecture", "?");
  return out.str();
}

void run_section(std::ostringstream& md, const RunResults& r, const Analysis& a) {
  const json& env = r.env;
  md << "## Run\n\n| | |\n|---|---|\n";
  md << "| run | " << json_text(env, "run_id", r.dir.filename().string()) << " |\n";
  md << "| git revision | " << run_value(r, "git_revision", "unknown") << " |\n";
  md << "| inventory | " << run_value(r, "inventory", "unknown") << " |\n";
  md << "| backend / target | " << a.backend << " / " << run_value(r, "target", "unknown")
     << " |\n";
  md << "| link | " << a.link_label << " |\n";
  md << "| timing | " << (a.modeled ? "modeled: " : "measured: ") << a.timing_label << " |\n";
  md << "| frames per configuration | at least " << run_value(r, "frames", "?")
     << " timed (and enough for " << run_value(r, "min_seconds", "0")
     << " s at the predicted fps), " << run_value(r, "inflight", "?") << " in flight, "
     << run_value(r, "warmup_frames", "?") << " warm-up; " << run_value(r, "iterations", "?")
     << " iteration(s), " << run_value(r, "repetitions", "1") << " repetition(s) |\n";
  md << "| models | zoo, " << run_value(r, "zoo_experts", "?") << " experts, input "
     << run_value(r, "zoo_input", "?") << ", seed " << run_value(r, "zoo_seed", "?") << " |\n";
  if (env.is_object() && env.contains("hosts") && env["hosts"].is_object()) {
    std::string workers;
    for (const auto& [name, h] : env["hosts"].items()) {
      if (json_text(h, "role") == "head")
        md << "| head node | " << host_line(name, h) << " |\n";
      else
        workers += (workers.empty() ? "" : ", ") + name + " " + json_text(h, "address");
    }
    if (!workers.empty()) md << "| workers | " << workers << " |\n";
  } else {
    md << "| host | " << run_value(r, "host_name", "?") << ", " << run_value(r, "num_cpus", "?")
       << " CPUs |\n";
  }
  if (env.is_object() && env.contains("versions") && env["versions"].is_object()) {
    const json& v = env["versions"];
    std::string versions =
        "ansible " + json_text(v, "ansible", "?") + "; " + json_text(v, "compiler", "?");
    if (v.contains("packages") && v["packages"].is_object())
      for (const auto& [p, ver] : v["packages"].items())
        versions += "; " + p + " " + (ver.is_string() ? ver.get<std::string>() : ver.dump());
    md << "| versions | " << versions << " |\n";
  }
  for (const auto& s : r.suites)
    md << "| suite | `" << s.file << "` (" << s.get("date", "?") << ") |\n";
  std::string loads;
  for (const auto& l : a.loads)
    if (l.load >= 0)
      loads += (loads.empty() ? "" : "; ") + l.suite + " " + fixed(l.load, 2) + " on " +
               std::to_string(l.cpus) + " CPUs" + (l.busy() ? " ⚠ busy" : "");
  if (!loads.empty()) md << "| load average when each suite started | " << loads << " |\n";
  md << "\n";
}

// Measured fps on a busy machine understate the modeled ones, and two such runs disagree:
// say so at the top rather than let a reader compare them with a quiet run.
void busy_machine_warning(std::ostringstream& md, const Analysis& a) {
  for (const auto& l : a.loads) {
    if (!l.busy()) continue;
    md << "> ⚠ **The machine was busy**: load average " << fixed(l.load, 1) << " on " << l.cpus
       << " CPUs when `" << l.suite
       << "` started. The workers' and the orchestrator's real CPU work (receiving, sending, "
          "scheduling) waited for other processes, so measured fps fall short of the model "
          "and break-even sizes move; measure on a quiet machine before comparing runs.\n\n";
    return;  // one warning names the first busy suite; the run table lists them all
  }
}

// Whether strategy `s` was swept on `n` nodes: a row of it, or for auto, a row marked as the
// planner's choice (auto measured once, as the strategy whose plan it is).
bool swept(const FamilyAnalysis& fa, int n, const std::string& s) {
  return std::any_of(fa.rows.begin(), fa.rows.end(), [&](const Row& r) {
    return r.m.nodes == n && (r.m.strategy == s || (strategy_chooses(s) && r.m.planner_choice));
  });
}

// The node counts swept for a subset of the strategies or sizes (the suites'
// --node-strategies, --node-sizes), as a note under a table: "On 4 nodes only hybrid,
// replicate and auto were swept, at 10M and 20M." Empty when every count has every
// strategy at every size. `break_even`: also says what `≤ S` means there.
std::string subset_note(const FamilyAnalysis& fa, bool break_even) {
  std::string note;
  auto listed = [](const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i)
      out += (i == 0 ? "" : (i + 1 == items.size() ? " and " : ", ")) + items[i];
    return out;
  };
  for (int n : fa.node_counts) {
    if (n == 1) continue;
    std::vector<std::string> strategies, sizes;
    for (const auto& s : fa.strategies)
      if (swept(fa, n, s)) strategies.push_back(s);
    for (const auto& size : fa.sizes)
      for (const auto& r : fa.rows)
        if (r.m.nodes == n && r.m.size == size.label) {
          sizes.push_back(size.label);
          break;
        }
    const bool fewer_strategies = strategies.size() < fa.strategies.size();
    const bool fewer_sizes = sizes.size() < fa.sizes.size();
    if (!fewer_strategies && !fewer_sizes) continue;
    note += std::string(note.empty() ? "" : " ") + "On " + std::to_string(n) + " nodes only " +
            (fewer_strategies ? listed(strategies) : "every strategy") + " " +
            (strategies.size() == 1 ? "was" : "were") + " swept" +
            (fewer_sizes ? ", at " + listed(sizes) +
                               (break_even ? " (its `≤ S` is the smallest of these)" : "")
                         : "") +
            ".";
  }
  return note;
}

// "1M's 1.06× [1.04, 1.08]": a straddling speedup with the interval the rule read, and the
// run's own spread that widened it where there was one ("[0.97, 1.16], own spread 2.0 %").
std::string straddle_text(const BreakEven::Straddle& s) {
  return s.size + "'s " + fixed(s.at, 2) + "× [" + fixed(s.lo, 2) + ", " + fixed(s.hi, 2) +
         (s.spread > 0 ? ", own spread " + fixed(100 * s.spread, 1) + " %" : "") + "]";
}

// The note of a table's "no gain" cells: why the strategy cannot beat one node here, and
// the speedups it read all the same (over every node count of the table).
std::string no_gain_text(const std::vector<BreakEven>& table, const std::string& strategy) {
  double lo = 0, hi = 0;
  for (const auto& be : table)
    if (be.kind == BreakEven::Kind::NoGain) {
      lo = lo > 0 ? std::min(lo, be.read_lo) : be.read_lo;
      hi = std::max(hi, be.read_hi);
    }
  return "No gain: " + strategy +
         " runs each frame whole on one node, so with one frame in flight it is never faster "
         "than one node, at any size; its SingleStream speedups read " +
         fixed(lo, 2) + (fixed(hi, 2) != fixed(lo, 2) ? "-" + fixed(hi, 2) : "") + "×.";
}

void break_even_table(std::ostringstream& md, const FamilyAnalysis& fa,
                      const std::vector<BreakEven>& table, double min_gain, double noise_margin) {
  md << "| nodes |";
  for (const auto& s : fa.strategies)
    md << " " << s << (strategy_is_baseline(s) ? " (data-parallel baseline)" : "") << " |";
  md << "\n|---|";
  for (std::size_t i = 0; i < fa.strategies.size(); ++i) md << "---|";
  md << "\n";
  std::vector<std::string> notes;  // one per noisy cell, in table order
  std::size_t no_gain_note = 0;    // the one note every "no gain" cell of the table shares
  for (int n : fa.node_counts) {
    if (n == 1) continue;
    md << "| " << n << " |";
    for (const auto& s : fa.strategies) {
      std::string cell = swept(fa, n, s) ? "—" : "not swept";
      for (const auto& be : table) {
        if (be.nodes != n || be.strategy != s) continue;
        cell = break_even_cell(be);
        if (be.kind == BreakEven::Kind::NoGain) {
          if (no_gain_note == 0) {
            notes.push_back(no_gain_text(table, s));
            no_gain_note = notes.size();
          }
          cell += superscript(no_gain_note);
        }
        if (be.noisy && be.kind != BreakEven::Kind::NotPossible) {
          std::string straddles;
          bool own_spread = false;  // a straddling size's own spread was wider than the margin
          for (const auto& st : be.straddling) {
            straddles += (straddles.empty() ? "" : ", ") + straddle_text(st);
            own_spread = own_spread || st.spread > 0;
          }
          notes.push_back("Noise: " + std::to_string(n) + " nodes, " + s + ": " + straddles +
                          (be.straddling.size() == 1 ? " lies" : " lie") + " within " +
                          percent_text(noise_margin) +
                          (own_spread ? " (or its own spread, where named)" : "") + " of " +
                          speedup_threshold_text(min_gain) +
                          ", so noise decides where the break-even lies between " +
                          range_end_text(be, false) + " and " + range_end_text(be, true) + ".");
          cell += superscript(notes.size());
        }
      }
      md << " " << cell << " |";
    }
    md << "\n";
  }
  md << "\n";
  for (std::size_t i = 0; i < notes.size(); ++i)
    md << superscript(i + 1) << " " << notes[i] << "\n\n";
}

void break_even_section(std::ostringstream& md, const Analysis& a) {
  bool no_gain = false;  // a table has a "no gain" cell
  for (const auto& fa : a.families)
    for (const auto& be : fa.latency_break_even)
      no_gain = no_gain || be.kind == BreakEven::Kind::NoGain;
  md << "## Break-even model size\n\n"
     << "The smallest model size from which N nodes beat one node at every larger size "
        "measured by more than "
     << percent_text(a.min_gain) << ": the speedup's 95 % interval over the repetitions lies above "
     << speedup_threshold_text(a.min_gain)
     << " (a smaller gain, or an interval that reaches down to it, does not count: gains "
        "that small decided break-evens by chance from run to run, and buy little for a "
        "second board). `≤ S`: already at the smallest size "
        "measured; `> S`: not even at the largest. The speedup at that size is in brackets "
        "with its interval. **≈ A–B (noise)**: the answer depends on noise, so the cell states "
        "the range the break-even lies in instead of flipping between runs: B is where the "
        "intervals stop lying wholly above the threshold (where N nodes surely pay off; `> S` "
        "when not even at the largest size), and sizes below B lie within "
     << percent_text(a.noise_margin)
     << " of the threshold, on either side of it (the noise margin: how far two runs at one "
        "commit read the same speedup apart, their p95; docs/benchmarking.md), so another run "
        "may read them on the other side; A is the smallest size the break-even reaches if "
        "they all count as wins (`≤ S`: the smallest size measured). `≈ ≥ S (noise)`: only "
        "the largest size, S, lies within the margin (S or beyond); `≈ any size (noise)`: "
        "every size does. Any reading of those sizes "
        "within their bands gives a break-even in the range, so two runs whose readings lie "
        "within the margin of one another state ranges that overlap, even where the ranges "
        "differ (`scripts/compare_breakeven.py` counts such cells as consistent); a firm "
        "answer is a range of one size. Where the suite recorded the run's own spread of a "
        "speedup (its two "
        "measurements' halves apart: the steady window's two halves' rates, or the first and "
        "second half of the frames' median latencies, summed over the configuration and its "
        "1-node baseline) and it is larger than the margin, it takes the margin's place: a "
        "load that came or went while a size was measured makes that size no firmer than it "
        "is. The note under the table names those sizes with their speedup and interval (the "
        "value divided and multiplied by 1 + the margin or that larger own spread, or the "
        "repetitions' 95 % interval where wider). `"
     << baseline_strategy()
     << "` runs the whole model on every node (data parallel) and is the baseline the model-"
        "parallel strategies are judged against"
     << (no_gain ? "; it runs each frame whole on one node, so with one frame in flight "
                   "(SingleStream) it cannot beat one node: **no gain**, whatever its speedups "
                   "read (the note gives them)"
                 : "")
     << ". Times are " << (a.modeled ? "**modeled**" : "**measured**") << " (" << a.timing_label
     << "; link " << a.link_label << ").\n\n";
  for (const auto& fa : a.families) {
    if (fa.throughput_break_even.empty()) continue;
    md << "### " << fa.family
       << (fa.scenarios ? ": throughput, Offline (frames per second, saturated)\n\n"
                        : ": throughput (frames per second)\n\n");
    break_even_table(md, fa, fa.throughput_break_even, a.min_gain, a.noise_margin);
    md << "### " << fa.family
       << (fa.scenarios ? ": latency, SingleStream (p50 of one frame alone)\n\n"
                        : ": latency (p50 per frame, under the throughput run's load)\n\n");
    break_even_table(md, fa, fa.latency_break_even, a.min_gain, a.noise_margin);
    if (const std::string note = subset_note(fa, true); !note.empty()) md << note << "\n\n";
  }
}

void figure(std::ostringstream& md, const Analysis& a, const FamilyAnalysis& fa,
            const std::string& kind, const std::string& caption) {
  md << "![" << fa.family << " " << kind << "](" << figure_file(fa.family, kind) << ")\n\n"
     << "*" << caption << " " << (a.modeled ? "Modeled" : "Measured") << " (" << a.timing_label
     << "; link " << a.link_label << ").*\n\n";
}

void speedup_matrix(std::ostringstream& md, const FamilyAnalysis& fa) {
  md << "| size | params | GMACs/frame | 1 node fps |";
  std::vector<std::pair<int, std::string>> configs;
  // A column per node count and strategy swept (a node count swept for a subset of the
  // strategies has columns for those only).
  for (int n : fa.node_counts)
    if (n > 1)
      for (const auto& s : fa.strategies)
        if (std::any_of(fa.rows.begin(), fa.rows.end(),
                        [&](const Row& r) { return r.m.nodes == n && r.m.strategy == s; }))
          configs.emplace_back(n, s);
  for (const auto& [n, s] : configs) md << " " << n << "× " << s << " |";
  md << "\n|---|---|---|---|";
  for (std::size_t i = 0; i < configs.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& size : fa.sizes) {
    const Row* base = fa.find(size.label, 1, "");
    md << "| " << size.label << " | " << count(size.params) << " | "
       << (base && !base->m.failed ? sig3(base->m.gmacs) : "—") << " | "
       << (base && !base->m.failed ? sig3(base->m.fps) : "—") << " |";
    for (const auto& [n, s] : configs) {
      const Row* r = fa.find(size.label, n, s);
      if (r && r->m.not_possible)
        md << " " << not_possible_cell(fa, r->m) << " |";
      else if (!r || r->m.failed || !r->has_baseline)
        md << " — |";
      else if (!r->measurement_error.empty())
        md << " ~~" << fixed(r->speedup, 2) << "×~~ measurement error ⚠ |";
      else
        md << " " << fixed(r->speedup, 2) << "× (" << fixed(100 * r->efficiency, 0) << " %)"
           << (r->m.planner_choice ? " ★" : "") << " |";
    }
    md << "\n";
  }
  md << "\n"
     << (fa.scenarios ? "Offline: s" : "S")
     << "peedup in throughput over one node, parallel efficiency in brackets; ★ the "
        "planner's choice (`split --strategy auto`) for that size and node count.";
  if (const std::string note = subset_note(fa, false); !note.empty())
    md << " " << note << " —: not measured.";
  md << "\n\n";
}

// Every strategy on N nodes against one board and against replicate (N copies of the model),
// the planner's choice marked, and which strategy measured best.
void strategies_section(std::ostringstream& md, const Analysis& a, const FamilyAnalysis& fa) {
  bool any = false;
  for (const auto& r : fa.rows) any = any || r.m.nodes > 1;
  if (!any) return;
  md << "### Strategies against one board and against replicate\n\n"
     << "Each strategy on N nodes: throughput speedup over one node and parallel efficiency "
        "(speedup / N), and its fps over replicate's on as many nodes (data parallel: N copies "
        "of the whole model; above 1.00× the model-parallel plan beats simply copying). "
        "★ marks the plan the planner picks (`split --strategy auto`, objective "
     << (a.objective.empty() ? std::string("latency") : a.objective)
     << "); where that plan is another row's it was measured once, as that row. Times are "
     << (a.modeled ? "modeled" : "measured") << ".\n\n"
     << "| size | nodes | strategy (plan) | fps | speedup vs 1 node | efficiency | vs replicate | "
        "p50 ms | predicted fps |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : fa.rows) {
    const Measurement& m = r.m;
    if (m.nodes == 1) continue;
    md << "| " << m.size << " | " << m.nodes << " | " << strategy_text(m) << " | ";
    if (m.failed) {
      md << (m.not_possible ? not_possible_cell(fa, m) : "failed: " + m.error)
         << " | | | | | | |\n";
      continue;
    }
    const LatencyBoundVerdict verdict = latency_bound_verdict(m);
    md << sig3(m.fps) << " | "
       << (r.has_baseline ? speedup_text(r.speedup, r.speedup_lo, r.speedup_hi) : "—") << " | "
       << (r.has_baseline ? fixed(100 * r.efficiency, 0) + " %" : "—") << " | "
       << (r.vs_replicate > 0 ? fixed(r.vs_replicate, 2) + "×" : "—") << " | " << sig3(m.p50_ms)
       << " | " << (m.predicted_fps > 0 ? sig3(m.predicted_fps) : "—") << " |\n";
  }
  md << "\n";
  // Per size and node count: the planner's choice against the best measured throughput.
  std::vector<std::string> lines;
  for (const auto& size : fa.sizes)
    for (int n : fa.node_counts) {
      if (n == 1) continue;
      const Row* choice = nullptr;
      const Row* best = nullptr;
      for (const auto& r : fa.rows) {
        if (r.m.size != size.label || r.m.nodes != n || r.m.failed) continue;
        if (r.m.planner_choice && !choice) choice = &r;
        // A measurement error is no evidence of the highest throughput.
        if (r.measurement_error.empty() && (!best || r.m.fps > best->m.fps)) best = &r;
      }
      if (!choice || !best) continue;
      std::string line =
          "- " + size.label + " on " + std::to_string(n) + " nodes: the planner picks " +
          (choice->m.plan_label.empty() ? choice->m.strategy : choice->m.plan_label) + " (" +
          sig3(choice->m.fps) + " fps, " + fixed(choice->speedup, 2) + "×" +
          (choice->measurement_error.empty() ? "" : ", a measurement error ⚠") + ")";
      if (best == choice)
        line += ", the highest throughput measured";
      else
        line += "; highest throughput measured: " + strategy_text(best->m) + " (" +
                sig3(best->m.fps) + " fps, " + fixed(best->speedup, 2) + "×)";
      lines.push_back(line);
    }
  if (!lines.empty()) {
    md << "The planner's choice for objective "
       << (a.objective.empty() ? std::string("latency") : a.objective)
       << " against the measured throughput:\n\n";
    for (const auto& l : lines) md << l << "\n";
    md << "\n";
  }
}

void measurements_table(std::ostringstream& md, const FamilyAnalysis& fa) {
  const std::string lat = fa.scenarios ? "SingleStream " : "";
  md << "| size | params | nodes | strategy | " << (fa.scenarios ? "Offline " : "")
     << "fps [95 % interval] | in flight | predicted fps | measured / predicted | " << lat
     << "p50 ms | " << lat << "p90 ms | " << lat << "p99 ms | speedup [95 % interval] | " << lat
     << "latency speedup | "
        "efficiency | busiest node | node ms/frame (plan) | worker CPU ms/frame | head CPU "
        "ms/frame | wire bytes/frame | between nodes/frame |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : fa.rows) {
    const Measurement& m = r.m;
    md << "| " << m.size << " | " << (m.failed ? "—" : count(m.params)) << " | " << m.nodes << " | "
       << strategy_text(m) << " | ";
    if (m.failed) {
      md << (m.not_possible ? not_possible_cell(fa, m) : "failed: " + m.error)
         << " | | | | | | | | | | | | | | | |\n";
      continue;
    }
    md << sig3(m.fps);
    if (m.fps_hi > m.fps_lo) md << " [" << sig3(m.fps_lo) << ", " << sig3(m.fps_hi) << "]";
    md << " | " << (m.inflight > 0 ? fixed(m.inflight, 0) : "—");
    md << " | " << (m.predicted_fps > 0 ? sig3(m.predicted_fps) : "—") << " | "
       << (r.fit > 0 ? fixed(r.fit, 2) + (std::fabs(r.fit - 1) > kFitTolerance ? " ⚠" : "") : "—")
       << " | " << sig3(m.p50_ms) << " | " << sig3(m.p90_ms) << " | " << sig3(m.p99_ms) << " | "
       << (r.has_baseline ? speedup_text(r.speedup, r.speedup_lo, r.speedup_hi) : "—") << " | "
       << (r.has_baseline && r.latency_speedup > 0 ? fixed(r.latency_speedup, 2) + "×" : "—")
       << " | " << (r.has_baseline ? fixed(100 * r.efficiency, 0) + " %" : "—") << " | "
       << (m.busiest_node_share > 0 ? fixed(100 * m.busiest_node_share, 0) + " %" : "—") << " | "
       << (m.node_ms > 0 ? sig3(m.node_ms) + " (" + sig3(m.predicted_node_ms) + ")" : "—") << " | "
       << (m.node_ms > 0 ? sig3(m.worker_cpu_ms) : "—") << " | "
       << (m.node_ms > 0 ? sig3(m.orchestrator_cpu_ms) : "—") << " | " << bytes(m.bytes_per_frame)
       << " | " << bytes(m.node_bytes_per_frame) << " |\n";
  }
  md << "\n";
}

// The planner's prediction against the measurement, per configuration, with the measured
// reason wherever they differ by more than the tolerance for a model of 5M parameters or more.
void fit_section(std::ostringstream& md, const FamilyAnalysis& fa) {
  int off = 0, checked = 0;
  for (const auto& r : fa.rows)
    if (r.fit > 0 && r.m.params >= kFitMinParams) {
      ++checked;
      if (std::fabs(r.fit - 1) > kFitTolerance) ++off;
    }
  md << "### Predicted and measured\n\n"
     << "The planner's predicted fps (its cost model, `plan.yaml`) next to the measured fps. "
     << off << " of the " << checked << " configurations of " << count(kFitMinParams)
     << " parameters or more differ by more than " << fixed(100 * kFitTolerance, 0)
     << " %; for those the reason column names the component that differs, from the "
        "measurements (the busiest node's backend time against the plan's, idle nodes, the "
        "workers' and the head node's CPU time per frame on this machine, the link).\n\n"
     << "| size | nodes | strategy | predicted fps | measured fps | measured / predicted | "
        "reason |\n|---|---|---|---|---|---|---|\n";
  for (const auto& r : fa.rows) {
    if (r.m.failed || !(r.fit > 0)) continue;
    const bool off_fit = std::fabs(r.fit - 1) > kFitTolerance;
    std::string reason = "—";
    if (off_fit)
      reason = !r.cause.empty() ? r.cause
                                : "not explained by the measured components (the timing "
                                  "model's own difference between planner and sim)";
    if (off_fit && r.m.params < kFitMinParams) reason += " (below " + count(kFitMinParams) + ")";
    md << "| " << r.m.size << " | " << r.m.nodes << " | " << strategy_text(r.m) << " | "
       << sig3(r.m.predicted_fps) << " | " << sig3(r.m.fps) << " | " << fixed(r.fit, 2)
       << (off_fit ? " ⚠" : "") << " | " << reason << " |\n";
  }
  md << "\n";
}

// MLPerf LoadGen's Server scenario: the highest Poisson arrival rate each configuration
// serves with its p99 under the bound.
void server_section(std::ostringstream& md, const FamilyAnalysis& fa) {
  if (fa.server.empty()) return;
  md << "### Server\n\n"
     << "**Server** scenario (MLPerf LoadGen's name): frames arrive as a Poisson process at a "
        "set rate, each sent when it arrives, its latency counted from its arrival; the result "
        "is the highest rate whose p99 latency stays under the bound (by default "
        "`--server-latency-multiple` x one node's SingleStream p50 of the same model, else "
        "`--max-latency-ms`), found by bisection between 0 and the configuration's Offline "
        "rate. Run for one node, and for replicate and the planner's choice on the largest "
        "node count. **Planner's bound**: a plan made with `split --max-latency-ms B` (the "
        "objective: the best plan whose predicted latency is under B) is judged here: met when "
        "the p99 at the Server rate is at most B.\n\n";
  int bounded = 0, met = 0;
  for (const auto& m : fa.server) {
    const LatencyBoundVerdict v = latency_bound_verdict(m);
    if (v.kind == LatencyBoundVerdict::Kind::NoBound) continue;
    ++bounded;
    if (v.kind == LatencyBoundVerdict::Kind::Met) ++met;
  }
  if (bounded > 0)
    md << "The planner's `--max-latency-ms` objective against Server: " << met << " of " << bounded
       << " configuration" << (bounded == 1 ? "" : "s")
       << " planned with a latency bound meet it.\n\n";
  md << "| size | nodes | strategy | p99 bound ms | Server fps | its p99 ms | Offline fps | "
        "Server / Offline | planner's latency ms | planner's bound (`--max-latency-ms`) "
        "|\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& m : fa.server) {
    md << "| " << m.size << " | " << m.nodes << " | " << (m.nodes == 1 ? "—" : strategy_text(m))
       << " | ";
    if (m.failed) {
      md << (m.not_possible ? not_possible_cell(fa, m) : "failed: " + m.error)
         << " | | | | | | |\n";
      continue;
    }
    const LatencyBoundVerdict verdict = latency_bound_verdict(m);
    md << sig3(m.latency_bound_ms) << " | " << (m.fps > 0 ? sig3(m.fps) : "none met it") << " | "
       << (m.fps > 0 ? sig3(m.p99_ms) : "—") << " | " << sig3(m.offline_fps) << " | "
       << (m.offline_fps > 0 ? fixed(m.fps / m.offline_fps, 2) : "—") << " | "
       << (m.predicted_latency_ms > 0 ? sig3(m.predicted_latency_ms) : "—") << " | "
       << (verdict.kind == LatencyBoundVerdict::Kind::NoBound ? "— (none given)" : verdict.text)
       << " |\n";
  }
  md << "\n";
}

// Configurations whose measured rate cannot be true, each with its cause; they are left out
// of the break-evens.
void measurement_errors(std::ostringstream& md, const FamilyAnalysis& fa) {
  std::vector<const Row*> errors;
  for (const auto& r : fa.rows)
    if (!r.measurement_error.empty()) errors.push_back(&r);
  if (errors.empty()) return;
  md << "**Measurement errors** (⚠ above; kept out of the break-evens): a rate more than "
     << fixed(100 * kBoundTolerance, 0)
     << " % above what the plan's busiest node, its links or the head node's port allow, or "
        "above 100 % parallel efficiency, is not a measurement of the plan.\n\n";
  for (const Row* r : errors)
    md << "- " << r->m.size << " on " << r->m.nodes << " node" << (r->m.nodes == 1 ? "" : "s")
       << (r->m.nodes == 1 ? "" : ", " + strategy_text(r->m)) << ": " << r->measurement_error
       << "\n";
  md << "\n";
}

// What a family's rows stand for, where a reader needs it: the ConvViT variants differ in
// where a KV260 runs their attention (docs/zoo.md).
std::string family_note(const std::string& family) {
  if (family == "convvit")
    return "The ConvViT with gated attention (`zoo convvit`, the default): every op runs on the "
           "KV260's DPU, as a lab would restructure a transformer for it.\n\n";
  if (family == "convvit-softmax")
    return "**Contrast rows: a transformer with softmax attention on the A53** (`zoo convvit "
           "--attention softmax`, the planner's `auto` on each node count). Its attention "
           "products, softmax, GELU and layernorm are CPU ops on the KV260, so some 95 % of a "
           "frame is Cortex-A53 time: these rows show how four A53 cores per board share a "
           "transformer's CPU work, not how DPUs scale.\n\n";
  return "";
}

void family_section(std::ostringstream& md, const RunResults& results, const Analysis& a,
                    const FamilyAnalysis& fa, const MarkdownOptions& o) {
  const std::string offline = fa.scenarios ? " Offline scenario." : "";
  md << "## " << fa.family << "\n\n"
     << family_note(fa.family) << "### Speedup and parallel efficiency"
     << (fa.scenarios ? " (Offline)" : "") << "\n\n";
  if (fa.scenarios) {
    double lo = 0, hi = 0;
    for (const auto& r : fa.rows)
      if (!r.m.failed && r.m.inflight > 0) {
        lo = lo > 0 ? std::min(lo, r.m.inflight) : r.m.inflight;
        hi = std::max(hi, r.m.inflight);
      }
    md << "Throughput comes from the **Offline** scenario (MLPerf LoadGen's name): enough frames "
          "in flight to saturate each plan, as many as the planner says "
          "(`offline_inflight()`: its predicted fps times its predicted latency, plus one per "
          "node; here "
       << fixed(lo, 0) << (hi > lo ? "-" + fixed(hi, 0) : "")
       << ", per configuration in the table of all measurements). Latency comes from the "
          "**SingleStream** scenario: one frame in flight, so a frame's latency is its own, "
          "with no queue.\n\n";
  }
  if (o.figures) {
    figure(md, a, fa, "speedup",
           "Throughput speedup over one node against model size, per node count and strategy "
           "(replicate dashed; dotted: break-even)." +
               offline);
    figure(md, a, fa, "efficiency",
           "Parallel efficiency (speedup / nodes) against model size." + offline);
  }
  speedup_matrix(md, fa);
  not_possible_notes(md, fa);
  measurement_errors(md, fa);
  strategies_section(md, a, fa);
  md << "### Latency" << (fa.scenarios ? " (SingleStream)" : "") << "\n\n";
  if (o.figures)
    figure(md, a, fa, "latency",
           fa.scenarios ? "SingleStream: latency of one frame alone, p50 (solid), p99 (dashed)."
                        : "Latency per frame under load, p50 (solid) and p99 (dashed).");
  server_section(md, fa);
  md << render_serve_section(fa, results.serve);
  md << render_dpu_section(fa, a.modeled);
  md << "### Bytes moved\n\n";
  if (o.figures)
    figure(md, a, fa, "bytes",
           "Bytes on the network per frame, measured: the input sent to the first nodes, the "
           "tensors between nodes and the outputs sent back, message headers included.");
  fit_section(md, fa);
  md << "### All measurements\n\n"
     << "fps: frames per second over the timed span, the mean of the repetitions with the 95 % "
        "confidence interval of the mean (Student's t); predicted: the planner's cost model; "
        "measured / predicted: their ratio (⚠ beyond 10 %); node ms/frame: the busiest "
        "node's backend time per frame (for `sim`, the modeled time it waited) with the "
        "plan's prediction of it in brackets; worker CPU: the largest worker process's CPU "
        "time per frame on this machine while streaming (receiving, sending, scheduling: "
        "real work of this host, which the modeled time must not include); head CPU: the "
        "orchestrating process's; "
        "p50/p90/p99: per-frame latency from input sent to output received; wire bytes: "
        "measured tensor traffic per frame; between nodes: the plan's int8 bytes from node to "
        "node per frame; busiest node: the share of the plan's predicted compute on its "
        "busiest node (1/N is a perfect split; a pipeline cuts only where a single tensor is "
        "live, so a model whose work sits in parallel branches leaves one stage with most of "
        "it).\n\n";
  measurements_table(md, fa);
  not_possible_notes(md, fa);
}

}  // namespace

std::string range_end_text(const BreakEven& be, bool upper) {
  if (!upper && be.noisy) return (be.reach_smallest ? "≤ " : "") + be.reach.label;
  switch (be.kind) {
    case BreakEven::Kind::Always:
      return "≤ " + be.size.label;
    case BreakEven::Kind::Never:
      return "> " + be.size.label;
    default:
      return be.size.label;
  }
}

std::string break_even_answer(const BreakEven& be) {
  switch (be.kind) {
    case BreakEven::Kind::NotPossible:
      return "not possible";
    case BreakEven::Kind::NoData:
      return "—";
    case BreakEven::Kind::NoGain:
      return "no gain";
    default:
      break;
  }
  // Noise decides: the range the break-even lies in, from the smallest size it reaches when
  // the straddling sizes count as wins to where it stays when they count as losses. Every
  // reading of those sizes within their bands gives a break-even in it, so two runs whose
  // readings lie within the band of one another state ranges that overlap.
  if (be.noisy) {
    // The ranges with nothing firm in them, said short: every size straddles ("≤ 1M–> 200M"),
    // or only the largest ("200M–> 200M": that size or beyond).
    if (be.kind == BreakEven::Kind::Never && be.reach_smallest) return "≈ any size (noise)";
    if (be.kind == BreakEven::Kind::Never && be.reach.label == be.size.label)
      return "≈ ≥ " + be.size.label + " (noise)";
    return "≈ " + range_end_text(be, false) + "–" + range_end_text(be, true) + " (noise)";
  }
  return range_end_text(be, true);
}

std::string break_even_cell(const BreakEven& be) {
  // A range carries no speedup: those of its sizes move from run to run.
  if (be.noisy || be.kind == BreakEven::Kind::NotPossible || be.kind == BreakEven::Kind::NoData ||
      be.kind == BreakEven::Kind::NoGain)
    return break_even_answer(be);
  const std::string at = speedup_text(be.at, be.at_lo, be.at_hi);
  if (be.kind == BreakEven::Kind::Never)
    return break_even_answer(be) + " (" + at + " at " + be.size.label + ")";
  return break_even_answer(be) + " (" + at + ")";
}

std::string render_markdown(const RunResults& results, const Analysis& a,
                            const MarkdownOptions& o) {
  std::ostringstream md;
  md << "# dpushard scaling report: "
     << json_text(results.env, "run_id", results.dir.filename().string()) << "\n\n";
  md << "> **Timing: " << (a.modeled ? "modeled" : "measured") << ".** ";
  if (a.modeled)
    md << "Each worker (sim backend) completes a fragment after the KV260 timing model's time "
          "for it (docs/perf.md); the tensors between fragments really travel between the "
          "worker processes, so transport and orchestration costs are measured on this "
          "machine. Link: "
       << a.link_label
       << (a.link_label.rfind("emulated", 0) == 0
               ? " (every node's and the orchestrator's port paces what it sends and receives "
                 "to the link rate, docs/cluster.md)."
               : ".");
  else
    md << "Times are measured: " << a.timing_label << ".";
  md << "\n\n";
  if (!o.figures) md << "> Figures not rendered: " << o.figures_note << "\n\n";
  busy_machine_warning(md, a);
  run_section(md, results, a);
  break_even_section(md, a);
  md << render_published_section(a, read_slurm_overhead(results.dir));
  for (const auto& fa : a.families) family_section(md, results, a, fa, o);
  if (!a.failed.empty()) {
    md << "## Failed configurations\n\n";
    for (const auto& m : a.failed)
      md << "- `" << m.name << "` (" << m.file << "): " << m.error << "\n";
    md << "\n";
  }
  md << "## Files\n\n"
     << "Raw Google Benchmark output: ";
  for (std::size_t i = 0; i < results.suites.size(); ++i)
    md << (i ? ", " : "") << "[`" << results.suites[i].file << "`](" << results.suites[i].file
       << ")";
  md << " (compare two runs with `/usr/share/benchmark/compare.py benchmarks A.json B.json`); ";
  if (!results.serve.empty()) {
    md << "Server through `dpushard serve`: ";
    for (std::size_t i = 0; i < results.serve.size(); ++i)
      md << (i ? ", " : "") << "[`" << results.serve[i].file << "`](" << results.serve[i].file
         << ")";
    md << "; ";
  }
  md << "environment: [`env.json`](env.json); figure data: `plots/figures.json`. Rendered by "
        "`dpushard report` (docs/benchmarking.md).\n";
  return md.str();
}

}  // namespace dpushard::report
