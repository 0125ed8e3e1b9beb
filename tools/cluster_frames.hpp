#pragma once
// `run PLAN --cluster C --input X [--output DIR]`: the frames of an --input source (as
// `exec --input` takes it) streamed through the cluster, read ahead, and each frame's
// outputs handed to the --output writer, as the local frame loop does (frame_loop.hpp).
// A frame that cannot be read is one error line; the others still run.

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpushard/cluster/cluster.hpp"
#include "dpushard/frames/frame_output.hpp"
#include "dpushard/frames/frame_source.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "frame_loop.hpp"
#include "frame_prefetch.hpp"

namespace dpushard::cli {

class ClusterFrames {
 public:
  // Reads nothing yet but what tells the frames apart (FrameSource); a single frame that
  // cannot be read throws its one-line error here, before any node is contacted.
  ClusterFrames(const Plan& plan, const std::string& plan_dir,
                const std::vector<std::string>& inputs, const OutputOptions& output, int inflight);
  ClusterFrames(const ClusterFrames&) = delete;
  ClusterFrames& operator=(const ClusterFrames&) = delete;

  // Sets the run's frame count and its frame_inputs, frame_skipped and frame_outputs.
  void attach(cluster::RunOptions& options);
  // After a complete run: frames.jsonl and predictions.jsonl (an incomplete run writes
  // neither: the folder then holds only the frames that completed).
  void finish();
  // input_frames, results (per frame that ran, in input order), errors, output_dir.
  void add_json(nlohmann::json& report) const;
  // 0, or when frames failed their count on stderr and the failure exit code (as exec).
  int exit_code() const;

 private:
  void record_error(std::size_t index, const std::string& message);

  FrameSource source_;
  FramePrefetch prefetch_;
  std::unique_ptr<FrameOutputWriter> writer_;
  std::string output_dir_;
  std::map<std::size_t, nlohmann::json> results_;  // by frame index
  std::map<std::size_t, nlohmann::json> errors_;
};

}  // namespace dpushard::cli
