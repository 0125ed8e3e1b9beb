#pragma once
// Shared pieces of the ONNX import tests: running the model scripts with Debian's
// Python, running the CLI, comparing float tensors and evaluating int8 models on `ref`.

#include <filesystem>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/quant/quantize.hpp"

namespace dpushard::onnxtest {

// A fresh folder for one test under the build tree.
std::filesystem::path work_dir(const std::string& name);

// Runs tests/onnx/make_models.py with `args` (with /usr/bin/python3); false on failure.
bool make_models(const std::string& args);

// Runs the dpushard CLI; returns its exit code, stdout in `out`.
int run_cli(const std::string& args, std::string& out);

// max |a - b| / max(max |b|, 1e-6): the relative error of `a` against the reference `b`.
double relative_error(const std::vector<float>& a, const std::vector<float>& b);
double cosine(const std::vector<float>& a, const std::vector<float>& b);
std::size_t argmax(const std::vector<float>& v);

// `reference` (PyTorch layout) in the IR layout of `ir_shape` (NCHW -> NHWC for 4-D).
std::vector<float> in_ir_layout(const FloatTensor& reference,
                                const std::vector<std::int64_t>& ir_shape);

// Runs an `_int` graph on the ref backend for each float input (IR layout), quantizing it
// with the input's fix point, and returns the dequantized first output of each.
std::vector<std::vector<float>> run_int8(const Graph& graph,
                                         const std::vector<FloatTensor>& inputs);

// Rows of a [N, ...] array as [1, ...] tensors.
std::vector<FloatTensor> rows(const FloatTensor& batch);

}  // namespace dpushard::onnxtest
