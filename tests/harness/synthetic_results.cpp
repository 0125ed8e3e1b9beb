#include "harness/synthetic_results.hpp"

#include <unistd.h>

#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace dpushard::testing {

using nlohmann::json;

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("dpushard-harness-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

namespace {

json entry(const std::string& family, const SyntheticConfig& c, double fps, int repetitions,
           int index) {
  const std::string run_name = family + "/params:" + c.size + "/nodes:" + std::to_string(c.nodes) +
                               "/strategy:" + c.strategy + "/iterations:1/manual_time";
  const double p50 = 1000.0 / fps * 1.5;
  return {{"name", run_name},
          {"family_index", 0},
          {"per_family_instance_index", 0},
          {"run_name", run_name},
          {"run_type", "iteration"},
          {"repetitions", repetitions},
          {"repetition_index", index},
          {"threads", 1},
          {"iterations", 1},
          {"real_time", 16 * 1000.0 / fps},
          {"cpu_time", 1.0},
          {"time_unit", "ms"},
          {"params", c.params},
          {"gmacs", c.params / 1e6},
          {"nodes", c.nodes},
          {"fps", fps},
          {"predicted_fps", fps * 1.05},
          {"busiest_node_share", c.nodes == 1   ? 1.0
                                 : c.nodes == 2 ? 0.47
                                                : 0.4},
          {"p50_ms", p50},
          {"p90_ms", p50 * 1.2},
          {"p99_ms", p50 * 1.5},
          {"speedup", 0.0},
          {"efficiency", 0.0},
          {"bytes_per_frame", c.nodes == 1 ? 0.0 : 200000.0 * c.nodes}};
}

}  // namespace

json benchmark_json(const std::string& family, const std::vector<SyntheticConfig>& configs,
                    const std::string& backend, int repetitions) {
  json benchmarks = json::array();
  for (const auto& c : configs) {
    // Repetitions spread symmetrically around fps, so their mean is fps.
    for (int i = 0; i < repetitions; ++i) {
      const double offset = repetitions == 1 ? 0 : (i - (repetitions - 1) / 2.0) * 0.01 * c.fps;
      benchmarks.push_back(entry(family, c, c.fps + offset, repetitions, i));
    }
    if (repetitions > 1) {
      for (const char* aggregate : {"mean", "median", "stddev"}) {
        json e = entry(family, c, c.fps, repetitions, 0);
        e["name"] = e["run_name"].get<std::string>() + "_" + aggregate;
        e["run_type"] = "aggregate";
        e["aggregate_name"] = aggregate;
        e.erase("repetition_index");
        if (std::string(aggregate) == "stddev") e["fps"] = 0.01 * c.fps;
        benchmarks.push_back(e);
      }
    }
  }
  return {{"context",
           {{"date", "2025-12-02T12:00:00+00:00"},
            {"host_name", "testhost"},
            {"executable", "bench_" + family + "_scaling"},
            {"num_cpus", 2},
            {"mhz_per_cpu", 2000},
            {"library_build_type", "release"},
            {"git_revision", "abc123"},
            {"backend", backend},
            {"target", "kv260"},
            {"link_gbps", "1.000"},
            {"link_emulation", "paced"},
            {"link_latency_us", "0"},
            {"inventory", "local"},
            {"frames", "16"},
            {"inflight", "4"}}},
          {"benchmarks", benchmarks}};
}

std::vector<SyntheticConfig> cnn_configs() {
  const std::vector<std::pair<std::string, double>> sizes = {
      {"2M", 2.01e6}, {"5M", 4.98e6}, {"10M", 10.2e6}};
  const std::vector<double> base = {100, 50, 20};
  const std::map<std::pair<int, std::string>, std::vector<double>> speedups = {
      {{2, "experts"}, {0.8, 1.2, 1.5}},   {{2, "pipeline"}, {0.5, 0.7, 0.9}},
      {{2, "replicate"}, {1.9, 1.9, 1.9}}, {{3, "experts"}, {1.2, 0.9, 1.3}},
      {{3, "pipeline"}, {1.2, 1.3, 1.4}},  {{3, "replicate"}, {2.7, 2.8, 2.9}}};
  std::vector<SyntheticConfig> configs;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    configs.push_back({sizes[i].first, sizes[i].second, 1, "single", base[i]});
    for (const auto& [key, s] : speedups)
      configs.push_back({sizes[i].first, sizes[i].second, key.first, key.second, base[i] * s[i]});
  }
  return configs;
}

void write_json(const std::filesystem::path& path, const json& doc) {
  std::ofstream out(path);
  out << doc.dump(2);
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace dpushard::testing
