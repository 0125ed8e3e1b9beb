#include "dpushard/frames/frame_output.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/base/npy.hpp"
#include "dpushard/graph/numerics.hpp"

namespace dpushard {
namespace fs = std::filesystem;
namespace {

std::string frame_prefix(std::size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%06zu", index);
  return buf;
}

NpyArray int8_array(const QTensor& t) {
  NpyArray a;
  a.type = NpyArray::Type::Int8;
  a.shape = t.shape;
  a.data.assign(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return a;
}

NpyArray float32_array(const QTensor& t) {
  NpyArray a;
  a.type = NpyArray::Type::Float32;
  a.shape = t.shape;
  a.data.resize(t.data.size() * 4);
  for (std::size_t i = 0; i < t.data.size(); ++i) {
    const auto v = static_cast<float>(dequantize(t.data[i], t.fix_point));
    std::memcpy(&a.data[i * 4], &v, 4);
  }
  return a;
}

std::string jsonl(const std::map<std::size_t, nlohmann::json>& lines) {
  std::string out;
  for (const auto& [index, line] : lines) out += line.dump() + "\n";
  return out;
}

}  // namespace

std::string output_file_stem(const std::string& output_name) {
  std::string stem = output_name;
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return stem.empty() ? "_" : stem;
}

bool is_classifier_output(const QTensor& t) {
  return !t.shape.empty() && t.shape.back() >= 2 && t.element_count() == t.shape.back();
}

nlohmann::json top_k_classes(const QTensor& t, int k) {
  std::vector<std::size_t> order(t.data.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.data[a] > t.data[b]; });
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < std::min(std::size_t(std::max(k, 0)), order.size()); ++i)
    out.push_back({{"class", order[i]}, {"score", dequantize(t.data[order[i]], t.fix_point)}});
  return out;
}

FrameOutputWriter::FrameOutputWriter(FrameOutputOptions options) : options_(std::move(options)) {
  std::error_code ec;
  const fs::file_status status = fs::status(options_.dir, ec);
  if (fs::exists(status) && !fs::is_directory(status))
    throw Error(options_.dir.string() + ": --output must be a folder, this is a file");
  fs::create_directories(options_.dir, ec);
  if (ec) throw Error(options_.dir.string() + ": cannot create the folder (" + ec.message() + ")");
  if (options_.top_k < 1) throw Error("--top-k must be at least 1");
}

void FrameOutputWriter::write(std::size_t index, const std::string& source,
                              const std::vector<QTensor>& outputs) {
  const std::string prefix = frame_prefix(index) + ".";
  std::set<std::string> stems;
  nlohmann::json files = nlohmann::json::array();
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const QTensor& t = outputs[k];
    if (!t.computed)
      throw Error("output '" + t.name +
                  "' was not computed (a timing-only backend: sim without --sim-numerics); "
                  "--output needs computed values");
    std::string stem = output_file_stem(t.name);
    if (!stems.insert(stem).second) stem += "_" + std::to_string(k);  // names that clash
    stems.insert(stem);
    const std::string int8_file = prefix + stem + ".npy";
    write_npy(options_.dir / int8_file, int8_array(t));
    files.push_back(int8_file);
    if (options_.float32) {
      const std::string float_file = prefix + stem + ".float32.npy";
      write_npy(options_.dir / float_file, float32_array(t));
      files.push_back(float_file);
    }
  }
  frames_[index] = {{"index", index}, {"file", source}, {"outputs", files}};
  if (outputs.size() == 1 && is_classifier_output(outputs.front())) {
    predictions_[index] = {{"index", index},
                           {"file", source},
                           {"output", outputs.front().name},
                           {"top_k", top_k_classes(outputs.front(), options_.top_k)}};
  } else {
    classifier_ = false;
  }
}

void FrameOutputWriter::record_error(std::size_t index, const std::string& source,
                                     const std::string& message) {
  frames_[index] = {{"index", index}, {"file", source}, {"error", message}};
  predictions_[index] = {{"index", index}, {"file", source}, {"error", message}};
}

void FrameOutputWriter::finish() {
  write_file_atomically(options_.dir / "frames.jsonl", jsonl(frames_));
  // Every frame that ran had one classifier output (and at least one ran).
  const bool any_ran = std::any_of(frames_.begin(), frames_.end(),
                                   [](const auto& f) { return f.second.contains("outputs"); });
  if (classifier_ && any_ran)
    write_file_atomically(options_.dir / "predictions.jsonl", jsonl(predictions_));
}

}  // namespace dpushard
