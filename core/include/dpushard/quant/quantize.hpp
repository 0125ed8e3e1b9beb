#pragma once
// Post-training quantization of a float IR graph (as import_onnx() makes it) to the
// `_int` form: per-tensor power-of-two fix points chosen by calibration, the way the
// Vitis AI quantizer does (docs/import.md). Also the float reference interpreter the
// calibration runs on, and NumPy .npy reading for calibration data.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/numerics.hpp"

namespace dpushard {

// A float tensor in IR layout (NHWC for feature maps), row-major.
struct FloatTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

// Reads a NumPy .npy array of any dtype dpushard/base/npy.hpp reads as float. Throws
// dpushard::Error naming the file on anything else.
FloatTensor read_float_npy(const std::filesystem::path& path);
// Writes a float32 .npy atomically.
void write_float_npy(const std::filesystem::path& path, const FloatTensor& tensor);

// Evaluates a float IR graph with plain loops in float: the semantics of PyTorch (true
// averages, exact activations). A `fix` op quantizes and dequantizes, so `_int` graphs
// run too (as a fake-quantized float model).
class FloatInterpreter {
 public:
  explicit FloatInterpreter(const Graph& graph);  // throws naming an op it cannot run
  ~FloatInterpreter();
  FloatInterpreter(const FloatInterpreter&) = delete;
  FloatInterpreter& operator=(const FloatInterpreter&) = delete;

  using Observer = std::function<void(const Op& op, const FloatTensor& value)>;
  // `inputs` follow graph.inputs(), outputs graph.outputs(). `observe`, when set, sees
  // every op's output as it is computed.
  std::vector<FloatTensor> run(const std::vector<FloatTensor>& inputs,
                               const Observer& observe = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One calibration sample: a value per graph input, in graph.inputs() order.
using CalibrationSet = std::vector<std::vector<FloatTensor>>;

// `count` samples of standard normal values, reproducible from `seed`.
CalibrationSet random_calibration(const Graph& graph, int count, std::uint64_t seed);
// Every *.npy file of `dir` in name order, for a single-input graph. An array whose
// shape is the input's with a larger leading (batch) dimension gives one sample per row;
// 4-D arrays given in NCHW (PyTorch's layout) are moved to NHWC.
CalibrationSet load_calibration(const Graph& graph, const std::filesystem::path& dir);
// `t` (one sample) in the IR layout of an input of `ir_shape`: as is when the shapes
// match, NCHW -> NHWC when t is the NCHW form of a 4-D input. Throws naming `who`.
FloatTensor to_input_layout(const FloatTensor& t, const std::vector<std::int64_t>& ir_shape,
                            const std::string& who);

struct QuantizeReport {
  int calibration_samples = 0;
  int fix_ops = 0;
  std::map<int, int> activation_fix_points;  // fix_point -> number of activation fixes
  std::map<int, int> weight_fix_points;      // fix_point -> number of weight/bias consts
  int shift_adjustments = 0;  // fix points moved to keep shift_cut / shift_bias legal
  std::int64_t parameters = 0;
};

// Quantizes `float_graph` (no fix ops) with the calibration samples; returns a validated
// `_int` graph in which every output is fix-terminated. Throws naming the op on anything
// it cannot quantize.
Graph quantize(const Graph& float_graph, const CalibrationSet& calibration,
               QuantizeReport* report = nullptr);

// The fix point in [lo, hi] minimising the squared error of quantizing `values` to int8
// with `mode`; the smallest such fix point on ties.
int best_fix_point(std::span<const float> values, RoundMode mode, int lo, int hi);
// The largest fix point at which max |value| still fits int8 (no clipping).
int max_fix_point(double max_abs);

}  // namespace dpushard
