#include "harness.hpp"

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/numerics.hpp"

namespace dpushard::onnxtest {
namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

std::filesystem::path work_dir(const std::string& name) {
  // One folder per process: ctest runs each test of a suite in a process of its own, and
  // two processes sharing a fixture's folder remove each other's files.
  const std::filesystem::path dir =
      std::filesystem::path(DPUSHARD_ONNX_WORK) / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

bool make_models(const std::string& args) {
  const std::string command =
      "/usr/bin/python3 " +
      quoted(std::string(DPUSHARD_SOURCE_DIR) + "/tests/onnx/make_models.py") + " " + args +
      " >/dev/null 2>" +
      quoted(std::string(DPUSHARD_ONNX_WORK) + "/python_" + std::to_string(::getpid()) + ".err");
  return std::system(command.c_str()) == 0;
}

int run_cli(const std::string& args, std::string& out) {
  static int calls = 0;
  const std::filesystem::path file =
      std::filesystem::path(DPUSHARD_ONNX_WORK) /
      ("cli_" + std::to_string(::getpid()) + "_" + std::to_string(++calls) + ".out");
  const std::string command = quoted(DPUSHARD_CLI) + " " + args + " >" + quoted(file.string());
  const int status = std::system(command.c_str());
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  out = s.str();
  std::filesystem::remove(file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0.0, scale = 1e-6;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += static_cast<double>(a[i]) * static_cast<double>(b[i]);
    aa += static_cast<double>(a[i]) * static_cast<double>(a[i]);
    bb += static_cast<double>(b[i]) * static_cast<double>(b[i]);
  }
  return aa > 0.0 && bb > 0.0 ? ab / std::sqrt(aa * bb) : 0.0;
}

std::size_t argmax(const std::vector<float>& v) {
  return static_cast<std::size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

std::vector<float> in_ir_layout(const FloatTensor& reference,
                                const std::vector<std::int64_t>& ir_shape) {
  return to_input_layout(reference, ir_shape, "reference").data;
}

std::vector<std::vector<float>> run_int8(const Graph& graph,
                                         const std::vector<FloatTensor>& inputs) {
  auto backend = make_backend("ref");
  backend->load(graph);
  const std::vector<QTensor> specs = input_specs(graph);
  std::vector<std::vector<float>> out;
  for (const auto& x : inputs) {
    QTensor q = specs.at(0);
    q.data.resize(x.data.size());
    for (std::size_t i = 0; i < x.data.size(); ++i)
      q.data[i] = quantize(static_cast<double>(x.data[i]), q.fix_point, RoundMode::Std);
    const std::vector<QTensor> y = backend->run({q});
    std::vector<float> f(y.at(0).data.size());
    for (std::size_t i = 0; i < f.size(); ++i)
      f[i] = static_cast<float>(dequantize(y[0].data[i], y[0].fix_point));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<FloatTensor> rows(const FloatTensor& batch) {
  std::vector<FloatTensor> out;
  const std::int64_t n = batch.shape.at(0);
  const std::size_t per = batch.data.size() / static_cast<std::size_t>(n);
  std::vector<std::int64_t> shape = batch.shape;
  shape[0] = 1;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto begin =
        batch.data.begin() + static_cast<std::ptrdiff_t>(per * static_cast<std::size_t>(i));
    out.push_back({shape, std::vector<float>(begin, begin + static_cast<std::ptrdiff_t>(per))});
  }
  return out;
}

}  // namespace dpushard::onnxtest
