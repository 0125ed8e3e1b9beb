#include "cluster_frames.hpp"

#include <algorithm>
#include <iostream>
#include <optional>
#include <utility>

#include "cli_common.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/graph/preprocessing.hpp"
#include "dpushard/plan/fragment_io.hpp"

namespace dpushard::cli {
namespace {

std::vector<InputSpec> input_specs(const Plan& plan) {
  std::vector<InputSpec> specs;
  for (const auto& t : plan.model_inputs)
    specs.push_back({t.name, t.shape, t.fix_point, t.round_mode});
  return specs;
}

// The preprocessing block recorded with the model, as the plan's fragments carry it (the
// one `run --local` uses: LocalPlanRunner::preprocessing).
std::optional<Preprocessing> plan_preprocessing(const Plan& plan, const std::string& plan_dir) {
  for (const auto& fragment : plan.fragments)
    if (auto p = recorded_preprocessing(load_fragment(fragment, plan_dir))) return p;
  return std::nullopt;
}

// Enough frames read ahead to fill the window and the next few; each read is a thread.
std::size_t read_ahead(int inflight) {
  return static_cast<std::size_t>(std::clamp(inflight + 2, 4, 32));
}

}  // namespace

ClusterFrames::ClusterFrames(const Plan& plan, const std::string& plan_dir,
                             const std::vector<std::string>& inputs, const OutputOptions& output,
                             int inflight)
    : source_(inputs, input_specs(plan), plan_preprocessing(plan, plan_dir), plan_dir),
      prefetch_(source_, read_ahead(inflight)),
      writer_(make_output_writer(output)),
      output_dir_(output.dir) {
  print_notes(source_);
  if (source_.size() == 1) (void)source_.frame(0);  // the only frame: the command's one error
}

void ClusterFrames::attach(cluster::RunOptions& options) {
  options.frames = static_cast<std::int64_t>(source_.size());
  options.frame_inputs = [this](std::uint64_t frame) {
    return prefetch_.take(static_cast<std::size_t>(frame)).inputs;
  };
  options.frame_skipped = [this](std::uint64_t frame, const std::string& error) {
    record_error(static_cast<std::size_t>(frame), error);
  };
  options.frame_outputs = [this](std::uint64_t frame, std::vector<QTensor> outputs) {
    const auto index = static_cast<std::size_t>(frame);
    try {
      if (writer_) writer_->write(index, source_.source(index), outputs);
    } catch (const Error& e) {  // e.g. a timing-only node computed no values
      record_error(index, e.what());
      return;
    }
    nlohmann::json described = nlohmann::json::array();
    for (const QTensor& t : outputs) described.push_back(tensor_json(t, true));
    results_[index] = {{"index", index}, {"file", source_.source(index)}, {"outputs", described}};
  };
}

void ClusterFrames::record_error(std::size_t index, const std::string& message) {
  std::cerr << "dpushard: error: " << message << "\n";
  errors_[index] = {{"index", index}, {"file", source_.source(index)}, {"error", message}};
  if (writer_) writer_->record_error(index, source_.source(index), message);
}

void ClusterFrames::finish() {
  if (writer_) writer_->finish();
}

void ClusterFrames::add_json(nlohmann::json& report) const {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& [index, result] : results_) results.push_back(result);
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& [index, error] : errors_) errors.push_back(error);
  report["input_frames"] = source_.size();
  report["results"] = results;
  report["errors"] = errors;
  if (writer_) report["output_dir"] = output_dir_;
}

int ClusterFrames::exit_code() const {
  FramesRun run;
  run.frames = source_.size();
  for (const auto& [index, error] : errors_) run.errors.push_back(error);
  return frames_exit_code(run);
}

}  // namespace dpushard::cli
