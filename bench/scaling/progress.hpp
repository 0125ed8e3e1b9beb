#pragma once
// Progress lines of a sweep, one when a configuration starts and one when it ends, with
// the time spent and an estimate of the time left: the remaining configurations' weights
// (expected seconds each, from the plan's prediction) scaled by how the finished ones
// compared with their weights. Written to stderr and, when given, appended to a file.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace dpushard::bench {

class Progress {
 public:
  Progress(std::string suite, const std::filesystem::path& file);
  // The total expected work; call before the first start().
  void set_total(int runs, double weight);
  void start(const std::string& what);
  void finish(const std::string& what, double weight, const std::string& result);
  void note(const std::string& line);  // a free-form line with the same prefix

  // "1h02m", "3m05s", "42s".
  static std::string duration(double seconds);

 private:
  void emit(const std::string& line);
  double elapsed() const;

  std::string suite_;
  std::ofstream file_;
  std::chrono::steady_clock::time_point begin_;
  int runs_total_ = 0;
  int runs_done_ = 0;
  double weight_total_ = 0;
  double weight_done_ = 0;
};

}  // namespace dpushard::bench
