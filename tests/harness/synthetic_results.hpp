#pragma once
// Synthetic Google Benchmark output shaped like the scaling suites' (bench/), with
// speedups chosen so that every kind of break-even appears, for the report's tests.

#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

namespace dpushard::testing {

// A temporary folder removed at the end of the test.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct SyntheticConfig {
  std::string size;  // "2M"
  double params;
  int nodes;
  std::string strategy;  // "single" for one node
  double fps;
};

// One "iteration" entry per configuration (repetitions > 1: that many entries plus the
// mean/median/stddev aggregates, the mean equal to `fps`).
nlohmann::json benchmark_json(const std::string& family,
                              const std::vector<SyntheticConfig>& configs,
                              const std::string& backend, int repetitions = 1);

// cnn over 2M, 5M, 10M on 1 to 3 nodes. Throughput speedups per (nodes, strategy):
//   2 experts 0.8 1.1 1.5 -> from 5M      2 pipeline 0.5 0.7 0.9 -> > 10M
//   2 replicate 1.9 1.9 1.9 -> <= 2M      3 experts 1.2 0.9 1.3 -> from 10M
//   3 pipeline 1.1 1.2 1.4 -> <= 2M       3 replicate 2.7 2.8 2.9 -> <= 2M
std::vector<SyntheticConfig> cnn_configs();

void write_json(const std::filesystem::path& path, const nlohmann::json& doc);
std::string read_file(const std::filesystem::path& path);

}  // namespace dpushard::testing
