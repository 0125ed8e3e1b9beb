#include "scaling/progress.hpp"

#include <cstdio>
#include <iostream>

namespace dpushard::bench {

Progress::Progress(std::string suite, const std::filesystem::path& file)
    : suite_(std::move(suite)), begin_(std::chrono::steady_clock::now()) {
  if (!file.empty()) file_.open(file, std::ios::app);
}

void Progress::set_total(int runs, double weight) {
  runs_total_ = runs;
  weight_total_ = weight;
}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
}

std::string Progress::duration(double seconds) {
  const long s = seconds < 0 ? 0 : static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

void Progress::emit(const std::string& line) {
  std::cerr << line << std::endl;
  if (file_) file_ << line << std::endl;
}

void Progress::start(const std::string& what) {
  emit("[" + suite_ + " " + std::to_string(runs_done_ + 1) + "/" + std::to_string(runs_total_) +
       "] " + what + " ...");
}

void Progress::finish(const std::string& what, double weight, const std::string& result) {
  ++runs_done_;
  weight_done_ += weight;
  const double spent = elapsed();
  std::string left = "done";
  if (runs_done_ < runs_total_) {
    const double rate = weight_done_ > 0 ? spent / weight_done_ : 0;
    left = "about " + duration(rate * (weight_total_ - weight_done_)) + " left";
  }
  emit("[" + suite_ + " " + std::to_string(runs_done_) + "/" + std::to_string(runs_total_) + "] " +
       what + ": " + result + " (" + duration(spent) + " elapsed, " + left + ")");
}

void Progress::note(const std::string& line) { emit("[" + suite_ + "] " + line); }

}  // namespace dpushard::bench
