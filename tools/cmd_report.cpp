// dpushard report RESULTS_DIR [--python PATH] [--no-plots] [--json]
// Renders RESULTS_DIR/report.md and RESULTS_DIR/plots/*.png from the scaling suites'
// Google Benchmark JSON and env.json in that folder (docs/benchmarking.md).

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "report/analysis.hpp"
#include "report/figures.hpp"
#include "report/markdown.hpp"
#include "report/node_loss_section.hpp"
#include "report/results.hpp"
#include "report/slurm_section.hpp"

namespace dpushard::cli {
namespace {

struct ReportOptions {
  std::string dir;
  std::string python;
  std::string direct_baseline;
  double min_gain = report::kDefaultMinGain;
  double noise_margin = report::kDefaultNoiseMargin;
  bool no_plots = false;
  bool json = false;
};

std::string default_python() {
  // Debian's interpreter has python3-matplotlib; a python3 earlier on PATH may not.
  std::error_code ec;
  return std::filesystem::exists("/usr/bin/python3", ec) ? "/usr/bin/python3" : "python3";
}

std::string kind_name(report::BreakEven::Kind kind) {
  switch (kind) {
    case report::BreakEven::Kind::Always:
      return "always";
    case report::BreakEven::Kind::From:
      return "from";
    case report::BreakEven::Kind::Never:
      return "never";
    case report::BreakEven::Kind::NotPossible:
      return "not_possible";
    case report::BreakEven::Kind::NoGain:
      return "no_gain";
    case report::BreakEven::Kind::NoData:
      break;
  }
  return "no_data";
}

nlohmann::json break_even_json(const std::vector<report::BreakEven>& table) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& be : table)
    out.push_back({{"nodes", be.nodes},
                   {"strategy", be.strategy},
                   {"kind", kind_name(be.kind)},
                   {"size", be.size.label},
                   {"params", be.size.params},
                   {"speedup", be.at},
                   {"noisy", be.noisy},
                   {"reach", be.noisy ? be.reach.label : be.size.label},
                   // The cell's answer: a size, or where noise decides the range it lies in.
                   {"answer", report::break_even_answer(be)}});
  return out;
}

int run_report(const ReportOptions& o) {
  const std::filesystem::path dir = o.dir;
  const report::RunResults results = report::read_results(dir);
  const report::Analysis analysis =
      report::analyze(results, {.min_gain = o.min_gain, .noise_margin = o.noise_margin});

  report::MarkdownOptions md;
  const nlohmann::json specs = report::figure_specs(analysis);
  if (o.no_plots) {
    md.figures = false;
    md.figures_note = "dpushard report ran with --no-plots.";
  } else {
    try {
      report::render_figures(specs, dir, o.python.empty() ? default_python() : o.python);
    } catch (const std::exception& e) {
      // The tables are still worth writing; the report says why the figures are missing.
      md.figures = false;
      md.figures_note = e.what();
      std::cerr << "dpushard report: warning: " << e.what() << "\n";
    }
  }
  // A sweep run as a SLURM job gets a section on what SLURM cost (slurm_section.hpp).
  const auto slurm = report::read_slurm_overhead(dir);
  std::string slurm_section;
  if (!o.direct_baseline.empty() && !slurm)
    throw Error("--direct-baseline: " + dir.string() + " is not a SLURM run (no slurm.json)");
  if (slurm) {
    std::optional<report::DirectBaseline> baseline;
    if (!o.direct_baseline.empty()) baseline = report::read_direct_baseline(o.direct_baseline);
    slurm_section = report::render_slurm_section(*slurm, baseline);
  }
  // A run folder where scripts/node_loss_bench.py wrote node_loss.json gets its section.
  const auto node_loss = report::read_node_loss(dir);
  const std::string extra_sections =
      slurm_section + (node_loss ? report::render_node_loss_section(*node_loss) : "");
  std::string text = report::render_markdown(results, analysis, md);
  if (!extra_sections.empty()) {
    // Before the closing "## Files" section, kept out of markdown.cpp (scaling tables only).
    const auto files = text.rfind("\n## Files\n");
    text.insert(files == std::string::npos ? text.size() : files + 1, extra_sections);
  }
  const auto report_path = dir / "report.md";
  write_file_atomically(report_path, text);

  nlohmann::json summary = {{"report", report_path.string()},
                            {"timing", analysis.modeled ? "modeled" : "measured"},
                            {"backend", analysis.backend},
                            {"measurements", results.measurements.size()},
                            {"failed", analysis.failed.size()},
                            {"min_gain", analysis.min_gain},
                            {"noise_margin", analysis.noise_margin},
                            {"figures", nlohmann::json::array()},
                            {"figures_error", md.figures ? "" : md.figures_note},
                            {"families", nlohmann::json::array()}};
  if (md.figures)
    for (const auto& f : specs["figures"]) summary["figures"].push_back(f["file"]);
  for (const auto& fa : analysis.families)
    summary["families"].push_back(
        {{"family", fa.family},
         {"break_even_throughput", break_even_json(fa.throughput_break_even)},
         {"break_even_latency", break_even_json(fa.latency_break_even)}});
  if (slurm) {
    auto value = [](const report::Seconds& s) { return s ? nlohmann::json(*s) : nlohmann::json(); };
    summary["slurm"] = {{"job_id", slurm->job_id},
                        {"submit_to_start_s", value(slurm->submit_to_start)},
                        {"step_launch_s", value(slurm->step_launch)},
                        {"teardown_s", value(slurm->teardown)},
                        {"fixed_cost_s", value(slurm->fixed_cost())},
                        {"suites_s", value(slurm->suites)},
                        {"overhead_percent", value(slurm->overhead_percent())}};
  }
  if (node_loss) {
    std::size_t events = 0;
    for (const auto& run : node_loss->runs) events += run.events.size();
    summary["node_loss"] = {{"runs", node_loss->runs.size()},
                            {"events", events},
                            {"goals_met", report::node_loss_goals_met(*node_loss)}};
  }
  if (o.json) print_json(summary);
  std::cerr << "report: " << report_path.string() << " (" << results.measurements.size()
            << " configurations, " << analysis.timing_label << ")\n";
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report", "Render RESULTS_DIR/report.md and plots from the scaling suites' JSON");
  sub->add_option("RESULTS_DIR", o->dir, "A run folder: bench_*_scaling.json and env.json")
      ->required();
  sub->add_option("--python", o->python,
                  "Python with matplotlib for the plots (default: /usr/bin/python3)");
  sub->add_option("--direct-baseline", o->direct_baseline,
                  "A direct run of the same sweep, compared in the SLURM section");
  sub->add_option("--min-gain", o->min_gain,
                  "Break-even: N nodes beat one when the speedup's interval lies above 1 + "
                  "this (default 0.05; 0 counts any gain)")
      ->check(CLI::Range(0.0, 0.99));
  sub->add_option("--noise-margin", o->noise_margin,
                  "Break-even: a speedup within a factor of 1 + this of the threshold, either "
                  "side, is marked as decided by noise (default 0.07: two runs' p95 spread)")
      ->check(CLI::Range(0.0, 0.49));
  sub->add_flag("--no-plots", o->no_plots, "Write report.md with tables only");
  sub->add_flag("--json", o->json, "Print a summary (break-even tables) as JSON on stdout");
  return {sub, [o] { return run_report(*o); }};
}

}  // namespace dpushard::cli
