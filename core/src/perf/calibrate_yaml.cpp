// The calibrated target's YAML (dpushard/perf/calibrate.hpp): the base target's own text, its
// comments kept, with the fitted figures' lines replaced and the fit appended as comments.

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/perf/calibrate.hpp"

namespace dpushard {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in{std::string(text)};
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Replaces the value of `section.key` (or the top-level `key` when section is empty) with
// `value`, marking the line; throws when the base text has no such line.
void replace(std::vector<std::string>& lines, const std::string& section, const std::string& key,
             const std::string& value) {
  bool inside = section.empty();
  for (std::string& line : lines) {
    if (!section.empty() && !line.empty() && line[0] != ' ' && line[0] != '#') {
      inside = starts_with(line, section + ":");
      continue;
    }
    const std::string indent = section.empty() ? "" : "  ";
    if (inside && starts_with(line, indent + key + ":")) {
      line = indent + key + ": " + value + "   # calibrated: dpushard calibrate (the fit below)";
      return;
    }
  }
  throw Error("calibrate: the base target has no line for " +
              (section.empty() ? key : section + "." + key));
}

// Replaces `cpu.fallback_gflops.key` (a block map two levels down) with `value`.
void replace_cpu_rate(std::vector<std::string>& lines, const std::string& key,
                      const std::string& value) {
  bool in_cpu = false, in_rates = false;
  for (std::string& line : lines) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != ' ') {
      in_cpu = starts_with(line, "cpu:");
      in_rates = false;
      continue;
    }
    if (in_cpu && starts_with(line, "  ") && line[2] != ' ' && line[2] != '#')
      in_rates = starts_with(line, "  fallback_gflops:");
    else if (in_rates && starts_with(line, "    " + key + ":")) {
      line = "    " + key + ": " + value + "   # calibrated: dpushard calibrate (the fit below)";
      return;
    }
  }
  throw Error("calibrate: the base target has no line for cpu.fallback_gflops." + key);
}

bool same_figure(double a, double b) {
  return std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b));
}

}  // namespace

std::string calibrated_target_yaml(std::string_view base_yaml, const CalibrationFit& fit,
                                   const std::string& name,
                                   const std::vector<std::string>& header) {
  std::vector<std::string> lines = split_lines(base_yaml);
  const Target& t = fit.target;
  replace(lines, "", "name", name);
  replace(lines, "dpu", "compute_efficiency", number(t.compute_efficiency));
  replace(lines, "dpu", "min_op_cycles", number(t.min_op_cycles));
  replace(lines, "dpu", "alu_min_op_cycles", number(t.alu_min_op_cycles));
  replace(lines, "overheads", "per_subgraph_us", number(t.per_subgraph_us));
  replace(lines, "host", "per_frame_us", number(t.per_frame_us));
  replace(lines, "host", "copy_in_ns_per_byte", number(t.copy_in_ns_per_byte));
  replace(lines, "host", "copy_out_ns_per_byte", number(t.copy_out_ns_per_byte));
  // The CPU rates the fit moved (a model had CPU ops of that class); the others stay as written.
  const std::string rate_prefix = "cpu.fallback_gflops.";
  for (const CalibrationParameter& p : fit.parameters)
    if (p.fitted && starts_with(p.name, rate_prefix))
      replace_cpu_rate(lines, p.name.substr(rate_prefix.size()), number(p.value));

  std::ostringstream out;
  out << "# Calibrated from a board's own measurements (dpushard calibrate; docs/perf.md\n"
      << "# \"Calibration from a board\"). Lines marked \"calibrated\" replace the base target's\n"
      << "# figures: the comments above them describe the base's values, the fit at the end of\n"
      << "# this file the new ones.\n";
  for (const std::string& line : lines) out << line << "\n";
  out << "\n# ---- dpushard calibrate: the fit ----\n";
  for (const std::string& h : header) out << "# " << h << "\n";
  out << "# " << fit.residuals.size() << " models, " << fit.iterations << " least-squares solve(s)"
      << (fit.converged ? "" : ", the regimes did NOT settle") << ", rms relative residual "
      << number(100.0 * fit.rms_relative) << " %\n";
  out << "# parameter: fitted value (standard error), base value\n";
  for (const CalibrationParameter& p : fit.parameters) {
    out << "#   " << p.name << ": ";
    if (p.fitted)
      out << number(p.value) << " (+- " << number(p.std_error) << ")";
    else
      out << "kept " << number(p.value);
    out << ", base " << number(p.base);
    if (!p.note.empty()) out << "; " << p.note;
    out << "\n";
  }
  out << "# residuals per model: measured ms, model ms, measured - model (ms, %)\n";
  for (const CalibrationResidual& r : fit.residuals)
    out << "#   " << r.name << ": " << number(r.measured_ms) << ", " << number(r.model_ms) << ", "
        << number(r.residual_ms()) << " (" << number(100.0 * r.relative()) << " %)\n";

  const std::string text = out.str();
  // The file must be what the fit says: parse it back.
  const Target back = parse_target(text, "the calibrated target");
  if (back.name != name || !same_figure(back.compute_efficiency, t.compute_efficiency) ||
      !same_figure(back.min_op_cycles, t.min_op_cycles) ||
      !same_figure(back.alu_min_op_cycles, t.alu_min_op_cycles) ||
      !same_figure(back.per_frame_us, t.per_frame_us) ||
      !same_figure(back.per_subgraph_us, t.per_subgraph_us) ||
      !same_figure(back.copy_in_ns_per_byte, t.copy_in_ns_per_byte) ||
      !same_figure(back.cpu_gemm_gflops, t.cpu_gemm_gflops) ||
      !same_figure(back.cpu_depthwise_gflops, t.cpu_depthwise_gflops) ||
      !same_figure(back.cpu_elementwise_gflops, t.cpu_elementwise_gflops) ||
      !same_figure(back.cpu_transcendental_gflops, t.cpu_transcendental_gflops) ||
      !same_figure(back.cpu_normalization_gflops, t.cpu_normalization_gflops))
    throw Error("calibrate: the calibrated target does not read back with the fitted figures");
  return text;
}

}  // namespace dpushard
