#pragma once
// Calibration of a DPU target from a board's own measurements (`dpushard calibrate`,
// docs/perf.md "Calibration from a board"): given compiled models and the time one frame of
// each took through the runtime (one frame at a time, int8 in and out), a small linear least
// squares fits the figures of the timing model those times pin down, and the target YAML is
// rewritten with them.
//
// The measured time of a frame is modeled as
//   DPU ops + extra subgraph launches + CPU ops          (the timing model, dpushard/perf/perf.hpp)
//   + host.per_frame_us + overheads.per_subgraph_us      (one runner call, one DPU subgraph)
//   + (input + output bytes) x host.copy_*_ns_per_byte
// Each DPU op is in one regime at the current figures: compute-bound (its cycles / (clock x
// efficiency)), at its engine's latency floor (min_op_cycles or alu_min_op_cycles / clock)
// or memory-bound (not fitted: DDR figures stay the base target's). With the regimes fixed
// the time is linear in 1 / efficiency, the two floors, the fixed cost and the copy cost;
// the fit solves that, re-reads the regimes at the new figures and repeats until they stop
// changing.

#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/perf/perf.hpp"

namespace dpushard {

struct CalibrationSample {
  std::string name;    // for the residuals: the file's name
  Graph graph;         // the model as it ran (a compiled xmodel)
  double measured_ms;  // one frame through the runtime, alone (e.g. the median of N)
};

// One fitted figure. `value` is in the target's units (compute_efficiency, cycles, us, ns per
// byte); `std_error` its standard error from the residuals (0 when the fit is exact or has
// no spare sample).
struct CalibrationParameter {
  std::string name;  // "dpu.compute_efficiency", ..., "host.copy_ns_per_byte"
  bool fitted = false;
  double value = 0;      // fitted, or the base target's when not
  double base = 0;       // the base target's value
  double std_error = 0;  // of `value`
  std::string note;      // why not fitted, or how it was written into the target
};

struct CalibrationResidual {
  std::string name;
  double measured_ms = 0;
  double model_ms = 0;  // the calibrated target's time of the frame
  double residual_ms() const { return measured_ms - model_ms; }
  double relative() const { return measured_ms > 0 ? residual_ms() / measured_ms : 0.0; }
};

struct CalibrationFit {
  Target target;  // the base target with the fitted figures
  std::vector<CalibrationParameter> parameters;
  std::vector<CalibrationResidual> residuals;  // in the samples' order
  int iterations = 0;                          // least-squares solves until the regimes settled
  bool converged = true;                       // false: the regimes still changed at the limit
  double rms_relative = 0;                     // root mean square of the relative residuals
};

// The parameter names, in the order of CalibrationFit::parameters.
const std::vector<std::string>& calibration_parameter_names();

// Fits `base`'s figures to `samples` (docs/perf.md). Each sample counts by its relative error
// (every model weighs the same, whatever its time). A figure no sample moves (no op at the
// ALU floor, say) or one the samples cannot tell apart from the others keeps its base value
// and says why. Throws dpushard::Error (one line) when fewer samples than fitted figures + 1
// remain, a measured time is not positive, or the fit leaves a figure out of its range
// (an efficiency above 1, a negative fixed cost).
CalibrationFit fit_calibration(const std::vector<CalibrationSample>& samples, const Target& base);

// `base_yaml` (the base target's own text) with the fitted figures replaced, `name` as its
// name, and the fit (parameters, residuals per model) as comments at its end; `header`
// lines (without '#') go in that comment block first. The result is checked to parse back
// to `fit.target`'s figures.
std::string calibrated_target_yaml(std::string_view base_yaml, const CalibrationFit& fit,
                                   const std::string& name, const std::vector<std::string>& header);

}  // namespace dpushard
