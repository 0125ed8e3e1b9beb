#pragma once
// The frame loop `exec` and `run --local` share: every frame of an --input source in
// order, a frame that cannot be read reported as one line and skipped, each frame's
// outputs written with --output, and the options that go with them.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "dpushard/frames/frame_output.hpp"
#include "dpushard/frames/frame_source.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::cli {

// --output DIR, --float, --top-k K.
struct OutputOptions {
  std::string dir;
  bool float32 = false;
  int top_k = 5;
};
void add_output_options(CLI::App& sub, OutputOptions& o);
// The writer for --output, or null without it.
std::unique_ptr<FrameOutputWriter> make_output_writer(const OutputOptions& o);

struct FramesRun {
  std::size_t frames = 0;                            // in the source
  std::vector<QTensor> first_inputs;                 // of the first frame that ran
  std::vector<QTensor> first_outputs;                // of the first frame that ran
  std::vector<double> latencies_ms;                  // every run of every frame
  nlohmann::json results = nlohmann::json::array();  // {index, file, outputs} per frame that ran
  nlohmann::json errors = nlohmann::json::array();   // {index, file, error} per frame that failed
};

using RunFrame = std::function<std::vector<QTensor>(const std::vector<QTensor>&)>;
using DescribeOutput = std::function<nlohmann::json(const QTensor&)>;

// Runs each frame of `source` `repeat` times through `run`. A frame whose file cannot be
// read is printed as "dpushard: error: ..." on stderr and recorded; the others still run.
// A source of one frame throws instead: its error is the command's one line.
// With a writer, each frame's outputs are written and the writer finished.
FramesRun run_frames(const FrameSource& source, const RunFrame& run, int repeat,
                     const DescribeOutput& describe, FrameOutputWriter* writer);

// Prints the source's notes on stderr, one line each.
void print_notes(const FrameSource& source);

// After a run: when frames failed, prints "dpushard: error: K of N inputs failed" and
// returns the failure exit code; else 0.
int frames_exit_code(const FramesRun& run);

}  // namespace dpushard::cli
