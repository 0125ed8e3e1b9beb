// The cpu backend's throughput: GOPS (2 x multiply-accumulates per second) per op type and
// per model, each with its fraction of the peak this machine reaches on a plain oneDNN int8
// GEMM (s8 x s8 -> s32, 1024^3, best of 30) measured in the same run at the same thread count.
// Frames run through Backend::run, so the numbers include requantisation and the frame's copies.
//
//   build/cpu/bench/bench_kernels [--benchmark_filter=Model]
// (docs/cpu_backend.md has the numbers and how to read them.)

#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/cost.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"

namespace dpushard {
namespace {

// GOPS of a plain oneDNN s8 x s8 -> s32 matmul, n^3, with `threads` OpenMP threads.
double gemm_gops(int threads, std::int64_t n, int iterations) {
  using dnnl::memory;
  omp_set_num_threads(threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc a_md({n, n}, memory::data_type::s8, memory::format_tag::ab);
  const memory::desc b_md({n, n}, memory::data_type::s8, memory::format_tag::any);
  const memory::desc c_md({n, n}, memory::data_type::s32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  memory a(a_md, engine), b(pd.weights_desc(), engine), c(c_md, engine);
  std::fill_n(static_cast<std::int8_t*>(a.get_data_handle()), n * n, std::int8_t{3});
  std::fill_n(static_cast<std::int8_t*>(b.get_data_handle()), pd.weights_desc().get_size(),
              std::int8_t{-5});
  const dnnl::matmul matmul(pd);
  const auto run = [&] {
    matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  };
  run();  // warm-up
  double best = 0.0;
  for (int i = 0; i < iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 2.0 * static_cast<double>(n * n * n) / s * 1e-9);
  }
  return best;
}

// The peak per thread count, measured once per run: the best of 30 GEMMs, so a busy
// machine lowers it less than a single try.
double peak_gops(int threads) {
  static std::map<int, double> peaks;
  auto it = peaks.find(threads);
  if (it == peaks.end()) it = peaks.emplace(threads, gemm_gops(threads, 1024, 30)).first;
  return it->second;
}

void BM_PeakInt8Gemm(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(gemm_gops(threads, 1024, 1));
  state.counters["peak_GOPS"] = peak_gops(threads);
}

// Runs `graph` on the cpu backend: GOPS and fraction of the GEMM peak.
void run_graph(benchmark::State& state, const Graph& graph) {
  const int threads = static_cast<int>(state.range(0));
  register_builtin_backends();
  BackendOptions options;
  options.threads = threads;
  auto backend = make_backend("cpu", options);
  backend->load(graph);
  std::vector<QTensor> inputs;
  for (const QTensor& spec : input_specs(graph))
    inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, 1));
  backend->run(inputs);  // warm-up
  double seconds = 0.0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(backend->run(inputs));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double frames = static_cast<double>(state.iterations());
  const double gops = 2.0 * static_cast<double>(graph_cost(graph).macs) * frames / seconds * 1e-9;
  const double peak = peak_gops(threads);
  state.counters["GOPS"] = gops;
  state.counters["peak_GOPS"] = peak;
  state.counters["fraction_of_peak"] = gops / peak;
  state.counters["ms_per_frame"] = seconds / frames * 1e3;
}

Value weights(GraphBuilder& b, const std::string& name, std::vector<std::int64_t> shape) {
  QTensor w = random_qtensor(name, shape, 0, 7);
  for (auto& v : w.data) v = static_cast<std::int8_t>(v / 4);  // trained-like magnitudes
  return b.constant(name, std::move(shape), w.data, 8);
}

// One conv (ResNet-like geometry) with bias and relu: x [1, h, w, c] -> oc.
Graph conv_graph(std::int64_t hw, std::int64_t c, std::int64_t oc, std::int64_t k,
                 std::int64_t stride, bool depthwise) {
  GraphBuilder b("conv");
  const Value x = b.input("x", {1, hw, hw, c}, 4);
  Conv2dSpec spec;
  spec.kernel = {k, k};
  spec.stride = {stride, stride};
  spec.pad = {k / 2, k / 2, k / 2, k / 2};
  spec.nonlinear = Nonlinear::Relu;
  const Value bias = weights(b, "b", {depthwise ? c : oc});
  if (depthwise)
    b.depthwise_conv2d("conv", x, weights(b, "w", {1, k, k, c}), bias, spec, 4);
  else
    b.conv2d("conv", x, weights(b, "w", {oc, k, k, c}), bias, spec, 4);
  return b.finish();
}

// A transformer-sized matmul: [m, k] x [k, n] + bias.
Graph matmul_graph(std::int64_t m, std::int64_t k, std::int64_t n) {
  GraphBuilder b("matmul");
  const Value a = b.input("a", {m, k}, 4);
  b.matmul("mm", a, weights(b, "w", {k, n}), weights(b, "b", {n}), false, 4);
  return b.finish();
}

void BM_Conv3x3_56x56x64(benchmark::State& s) { run_graph(s, conv_graph(56, 64, 64, 3, 1, false)); }
void BM_Conv3x3_14x14x256(benchmark::State& s) {
  run_graph(s, conv_graph(14, 256, 256, 3, 1, false));
}
void BM_Conv1x1_56x56_256to64(benchmark::State& s) {
  run_graph(s, conv_graph(56, 256, 64, 1, 1, false));
}
void BM_Depthwise3x3_112x112x32(benchmark::State& s) {
  run_graph(s, conv_graph(112, 32, 32, 3, 1, true));
}
void BM_Matmul_197x768x768(benchmark::State& s) { run_graph(s, matmul_graph(197, 768, 768)); }

void BM_ModelZooCnn10M_224(benchmark::State& s) {
  static const Graph graph = [] {
    ZooSpec spec;
    spec.params = 10'000'000;
    spec.input = {224, 224, 3};
    return make_cnn(spec);
  }();
  run_graph(s, graph);
}

void BM_ModelResNet20Fixture(benchmark::State& s) {
  const auto file =
      std::filesystem::path(DPUSHARD_FIXTURE_DIR) / "resnet20_cifar10_int_quantized.xmodel";
  if (!std::filesystem::exists(file)) {
    s.SkipWithError(("fixture not found: " + file.string()).c_str());
    return;
  }
  static const Graph graph = read_xmodel(file);
  run_graph(s, graph);
}

#define DPUSHARD_THREADS \
  ->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond)
BENCHMARK(BM_PeakInt8Gemm) DPUSHARD_THREADS->Iterations(3);
BENCHMARK(BM_Conv3x3_56x56x64) DPUSHARD_THREADS;
BENCHMARK(BM_Conv3x3_14x14x256) DPUSHARD_THREADS;
BENCHMARK(BM_Conv1x1_56x56_256to64) DPUSHARD_THREADS;
BENCHMARK(BM_Depthwise3x3_112x112x32) DPUSHARD_THREADS;
BENCHMARK(BM_Matmul_197x768x768) DPUSHARD_THREADS;
BENCHMARK(BM_ModelZooCnn10M_224) DPUSHARD_THREADS;
BENCHMARK(BM_ModelResNet20Fixture) DPUSHARD_THREADS;

}  // namespace
}  // namespace dpushard

BENCHMARK_MAIN();
