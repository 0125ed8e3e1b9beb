// The calibration fit (dpushard/perf/calibrate.hpp, docs/perf.md "Calibration from a board").

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/perf/calibrate.hpp"
#include "least_squares.hpp"

namespace dpushard {
namespace {

constexpr double kUsInMs = 1e3;
constexpr double kNsInMs = 1e6;
constexpr int kMaxIterations = 30;

// The unknowns, in this order: 1 / compute_efficiency, the two floors (cycles), the fixed
// cost of a frame (us: host.per_frame_us + one DPU subgraph's launch), the copy cost of its
// input and output bytes (ns per byte), the launch of each further subgraph (us: a CPU
// subgraph's, another DPU subgraph's) and, per CPU op class, 1 / its fallback rate (ns per
// float operation: the A53 path of the CPU subgraphs).
enum Unknown : std::size_t {
  kInverseEfficiency,
  kConvFloor,
  kAluFloor,
  kFixed,
  kCopy,
  kSubgraph,
  kCpuFirst,
  kUnknowns = kCpuFirst + 5
};

// The CPU rates in the order of their unknowns, by their key in cpu.fallback_gflops.
struct CpuRate {
  std::string_view key;
  double Target::*gflops;
};
constexpr CpuRate kCpuRates[] = {{"gemm", &Target::cpu_gemm_gflops},
                                 {"depthwise", &Target::cpu_depthwise_gflops},
                                 {"elementwise", &Target::cpu_elementwise_gflops},
                                 {"transcendental", &Target::cpu_transcendental_gflops},
                                 {"normalization", &Target::cpu_normalization_gflops}};
static_assert(kCpuFirst + std::size(kCpuRates) == kUnknowns);

bool is_cpu_rate(std::size_t j) { return j >= kCpuFirst; }

// One sample at the current figures: its coefficients per unknown (ms per unit), the time that
// no unknown moves (memory-bound DPU ops, trailing convs at their boundary slowdown), and its
// regimes.
struct Row {
  std::vector<double> coefficients = std::vector<double>(kUnknowns, 0.0);
  double known_ms = 0;
  std::string regimes;  // one letter per timed op: compute, floor, alu floor, memory, cpu
};

Row row_of(const Graph& graph, const Target& target) {
  PredictOptions options;
  options.io = HostIo::Network;  // int8 in and out; the TCP time is left out below
  const Prediction p = predict(graph, target, options);
  Row row;
  const double cycles_per_ms = target.clock_mhz * 1e3;
  for (const OpTiming& t : p.ops) {
    if (t.engine != Device::Dpu) {
      const auto* rate = std::find_if(std::begin(kCpuRates), std::end(kCpuRates),
                                      [&](const CpuRate& r) { return r.key == t.cpu_rate; });
      if (rate != std::end(kCpuRates))  // flops at the class's rate: ns per flop
        row.coefficients[kCpuFirst + static_cast<std::size_t>(rate - std::begin(kCpuRates))] +=
            t.cpu_flops / kNsInMs;
      else
        row.known_ms += t.ms;
      row.regimes += 'p';
    } else if (t.floor_ms > 0) {
      row.coefficients[t.alu ? kAluFloor : kConvFloor] += 1.0 / cycles_per_ms;
      row.regimes += t.alu ? 'a' : 'f';
    } else if (t.compute_ms >= t.memory_ms) {
      row.coefficients[kInverseEfficiency] += static_cast<double>(t.cycles) / cycles_per_ms;
      row.regimes += 'c';
    } else {
      row.known_ms += t.memory_ms;
      row.regimes += 'm';
    }
  }
  // Launches: the first DPU subgraph is in the fixed cost, the others and the CPU's are not.
  row.coefficients[kSubgraph] = (std::max(0, p.dpu_subgraphs - 1) + p.cpu_subgraphs) / kUsInMs;
  row.coefficients[kFixed] = 1.0 / kUsInMs;
  row.coefficients[kCopy] = static_cast<double>(p.input_bytes + p.output_bytes) / kNsInMs;
  return row;
}

std::vector<double> base_values(const Target& t) {
  std::vector<double> x = {1.0 / t.compute_efficiency, t.min_op_cycles,
                           t.alu_min_op_cycles,        t.per_frame_us + t.per_subgraph_us,
                           t.copy_in_ns_per_byte,      t.per_subgraph_us};
  for (const CpuRate& r : kCpuRates) x.push_back(1.0 / (t.*r.gflops));
  return x;
}

// `base` with the unknowns' values (each kept in the target's range while iterating).
Target with_figures(const Target& base, const std::vector<double>& x) {
  Target t = base;
  t.compute_efficiency = std::clamp(1.0 / std::max(x[kInverseEfficiency], 1e-9), 1e-6, 1.0);
  t.min_op_cycles = std::max(0.0, x[kConvFloor]);
  t.alu_min_op_cycles = std::max(0.0, x[kAluFloor]);
  const double fixed = std::max(0.0, x[kFixed]);
  // A frame's first DPU subgraph: its launch and the frame's fixed cost are one figure. The
  // launch is the fitted one when a model has a further subgraph, else the base's (a CPU
  // subgraph pays it too); the rest of the fixed cost is per frame.
  t.per_subgraph_us = std::clamp(x[kSubgraph], 0.0, fixed);
  t.per_frame_us = fixed - t.per_subgraph_us;
  t.copy_in_ns_per_byte = t.copy_out_ns_per_byte = std::max(0.0, x[kCopy]);
  for (std::size_t r = 0; r < std::size(kCpuRates); ++r)
    t.*kCpuRates[r].gflops = 1.0 / std::max(x[kCpuFirst + r], 1e-9);
  return t;
}

std::string not_moved_note(std::size_t j) {
  if (j == kSubgraph)
    return "not fitted: no model has a second subgraph (a CPU subgraph or another DPU one); "
           "the launch is paid once per frame, within the fixed cost";
  if (is_cpu_rate(j))
    return "not fitted: no model has a CPU op of this class (the A53 path of a CPU subgraph)";
  return "not fitted: no model has an op in that regime";
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

struct Solve {
  std::vector<double> x;          // every unknown: fitted, or the base value
  std::vector<double> std_error;  // of x (0 for the ones not fitted)
  std::vector<std::string> notes;
  std::vector<bool> fitted;
};

// The weighted least squares over the unknowns some sample moves, dropping any the samples
// cannot tell apart from the others.
Solve solve(const std::vector<Row>& rows, const std::vector<CalibrationSample>& samples,
            const std::vector<double>& base) {
  Solve s{base, std::vector<double>(kUnknowns, 0.0), std::vector<std::string>(kUnknowns),
          std::vector<bool>(kUnknowns, false)};
  std::vector<double> held = base;  // what the figures not fitted count at
  std::vector<std::size_t> active;
  for (std::size_t j = 0; j < kUnknowns; ++j) {
    const bool moved =
        std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.coefficients[j] > 0; });
    if (moved)
      active.push_back(j);
    else
      s.notes[j] = not_moved_note(j);
  }
  for (;;) {
    if (samples.size() < active.size() + 1)
      throw Error("calibrate: " + std::to_string(samples.size()) + " timed model" +
                  (samples.size() == 1 ? "" : "s") + " for " + std::to_string(active.size()) +
                  " figures: at least " + std::to_string(active.size() + 1) + " are needed");
    std::vector<std::vector<double>> a;
    std::vector<double> b;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const double w = 1.0 / samples[i].measured_ms;  // relative error: each model weighs the same
      std::vector<double> line;
      for (const std::size_t j : active) line.push_back(rows[i].coefficients[j] * w);
      a.push_back(std::move(line));
      double known = rows[i].known_ms;  // the figures not fitted count at their held value
      for (std::size_t j = 0; j < kUnknowns; ++j)
        if (std::find(active.begin(), active.end(), j) == active.end())
          known += rows[i].coefficients[j] * held[j];
      b.push_back((samples[i].measured_ms - known) * w);
    }
    std::size_t deficient = 0;
    const auto solution = perf::solve_least_squares(a, b, deficient);
    if (!solution) {
      const std::size_t j = active[std::min(deficient, active.size() - 1)];
      s.notes[j] = "not fitted: these models cannot tell it apart from the other figures";
      active.erase(active.begin() +
                   static_cast<std::ptrdiff_t>(std::min(deficient, active.size() - 1)));
      continue;
    }
    // A floor or cost below 0 (a figure these models do not resolve from 0, pushed below it
    // by their noise) is held at 0 and the others fitted again: writing it as 0 without
    // that would leave the others fitted to a negative one.
    std::size_t most_negative = active.size();
    for (std::size_t c = 0; c < active.size(); ++c) {
      const std::size_t j = active[c];
      const bool non_negative =
          j == kConvFloor || j == kAluFloor || j == kFixed || j == kCopy || j == kSubgraph;
      if (non_negative && solution->x[c] < 0 &&
          (most_negative == active.size() || solution->x[c] < solution->x[most_negative]))
        most_negative = c;
    }
    if (most_negative < active.size()) {
      const std::size_t j = active[most_negative];
      held[j] = s.x[j] = 0;
      s.notes[j] = "held at 0: the fit gave " + fmt(solution->x[most_negative]) +
                   " (below what these models resolve); the others were fitted again";
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(most_negative));
      continue;
    }
    const std::size_t spare = rows.size() - active.size();
    const double sigma2 =
        spare > 0 ? solution->residual_sum_of_squares / static_cast<double>(spare) : 0;
    for (std::size_t c = 0; c < active.size(); ++c) {
      s.x[active[c]] = solution->x[c];
      s.std_error[active[c]] = std::sqrt(solution->variance[c] * sigma2);
      s.fitted[active[c]] = true;
      s.notes[active[c]].clear();
    }
    return s;
  }
}

}  // namespace

const std::vector<std::string>& calibration_parameter_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {
        "dpu.compute_efficiency", "dpu.min_op_cycles",
        "dpu.alu_min_op_cycles",  "host.per_frame_us+overheads.per_subgraph_us",
        "host.copy_ns_per_byte",  "overheads.per_subgraph_us"};
    for (const CpuRate& r : kCpuRates) n.push_back("cpu.fallback_gflops." + std::string(r.key));
    return n;
  }();
  return names;
}

CalibrationFit fit_calibration(const std::vector<CalibrationSample>& samples, const Target& base) {
  if (samples.empty()) throw Error("calibrate: no timed model to fit");
  for (const CalibrationSample& s : samples)
    if (!(s.measured_ms > 0) || !std::isfinite(s.measured_ms))
      throw Error("calibrate: " + s.name + ": measured time " + fmt(s.measured_ms) +
                  " ms is not a positive number");
  const std::vector<double> base_x = base_values(base);
  CalibrationFit fit;
  Target current = base;
  std::vector<Row> rows;
  for (const CalibrationSample& s : samples) rows.push_back(row_of(s.graph, current));
  Solve result;
  fit.converged = false;
  while (fit.iterations < kMaxIterations) {
    ++fit.iterations;
    result = solve(rows, samples, base_x);
    current = with_figures(base, result.x);
    std::vector<Row> next;
    for (const CalibrationSample& s : samples) next.push_back(row_of(s.graph, current));
    const bool settled =
        std::equal(rows.begin(), rows.end(), next.begin(),
                   [](const Row& a, const Row& b) { return a.regimes == b.regimes; });
    rows = std::move(next);
    if (settled) {
      fit.converged = true;
      break;
    }
  }
  // The fit's own figures, in range or one line saying which is not.
  if (result.fitted[kInverseEfficiency]) {
    const double x = result.x[kInverseEfficiency];
    if (!(x >= 1.0))
      throw Error("calibrate: the fit gives dpu.compute_efficiency " + fmt(1.0 / x) +
                  ", outside (0, 1]: the compute-bound ops ran faster than the DPU's peak allows "
                  "(a model's time is not its DPU's, or the clock is wrong)");
  }
  for (std::size_t j = kCpuFirst; j < kUnknowns; ++j)
    if (result.fitted[j] && !(result.x[j] > 0))
      throw Error("calibrate: the fit gives " + calibration_parameter_names()[j] +
                  " no positive rate: the CPU ops of that class took no time beside the rest "
                  "(time more of them, or larger ones)");
  fit.target = current;
  const std::vector<std::string>& names = calibration_parameter_names();
  const std::vector<double> final_x = base_values(current);
  for (std::size_t j = 0; j < kUnknowns; ++j) {
    CalibrationParameter p;
    p.name = names[j];
    p.fitted = result.fitted[j];
    p.note = result.notes[j];
    if (j == kInverseEfficiency || is_cpu_rate(j)) {  // fitted as 1 / the figure
      p.value = j == kInverseEfficiency ? current.compute_efficiency
                                        : current.*kCpuRates[j - kCpuFirst].gflops;
      p.base = 1.0 / base_x[j];
      const double x = result.x[j];
      p.std_error = p.fitted ? result.std_error[j] / (x * x) : 0;
    } else {
      p.value = final_x[j];
      p.base = base_x[j];
      p.std_error = p.fitted ? result.std_error[j] : 0;
      if (p.fitted && result.x[j] < 0)
        p.note = "the fit gave " + fmt(result.x[j]) + "; written as 0";
      else if (j == kSubgraph && p.fitted && result.x[j] > p.value)
        p.note = "the fit gave " + fmt(result.x[j]) + ", more than the fixed cost; written as " +
                 fmt(p.value);
    }
    if (j == kFixed && p.fitted)
      p.note = (p.note.empty() ? "" : p.note + "; ") + "written as host.per_frame_us " +
               fmt(current.per_frame_us) + " + overheads.per_subgraph_us " +
               fmt(current.per_subgraph_us);
    if (j == kSubgraph && p.fitted)
      p.note = (p.note.empty() ? "" : p.note + "; ") +
               "each launch beyond a frame's first (a CPU subgraph's, another DPU subgraph's)";
    if (j == kCopy && p.fitted)
      p.note = (p.note.empty() ? "" : p.note + "; ") +
               "written as host.copy_in_ns_per_byte and copy_out_ns_per_byte";
    fit.parameters.push_back(std::move(p));
  }
  double sum = 0;
  for (const CalibrationSample& s : samples) {
    PredictOptions options;
    options.io = HostIo::Network;
    const Prediction p = predict(s.graph, current, options);
    CalibrationResidual r{s.name, s.measured_ms, p.dpu_ms + p.cpu_ms + p.host_ms};
    sum += r.relative() * r.relative();
    fit.residuals.push_back(std::move(r));
  }
  fit.rms_relative = std::sqrt(sum / static_cast<double>(samples.size()));
  return fit;
}

}  // namespace dpushard
