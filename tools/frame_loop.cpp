#include "frame_loop.hpp"

#include <chrono>
#include <iostream>

#include "dpushard/base/error.hpp"
#include "usage_error.hpp"

namespace dpushard::cli {

void add_output_options(CLI::App& sub, OutputOptions& o) {
  auto* output = sub.add_option(
      "--output", o.dir,
      "Folder for each frame's outputs: NNNNNN.OUTPUT.npy (int8), frames.jsonl and, for a "
      "classifier, predictions.jsonl");
  sub.add_flag("--float", o.float32, "--output: also NNNNNN.OUTPUT.float32.npy (dequantized)")
      ->needs(output);
  sub.add_option("--top-k", o.top_k, "--output: classes per input in predictions.jsonl")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000))
      ->needs(output);
}

std::unique_ptr<FrameOutputWriter> make_output_writer(const OutputOptions& o) {
  if (o.dir.empty()) return nullptr;
  return std::make_unique<FrameOutputWriter>(FrameOutputOptions{o.dir, o.float32, o.top_k});
}

FramesRun run_frames(const FrameSource& source, const RunFrame& run, int repeat,
                     const DescribeOutput& describe, FrameOutputWriter* writer) {
  using Clock = std::chrono::steady_clock;
  FramesRun out;
  out.frames = source.size();
  for (std::size_t i = 0; i < source.size(); ++i) {
    Frame frame;
    try {
      frame = source.frame(i);
    } catch (const Error& e) {
      if (source.size() == 1) throw;  // the only frame: the command's one error line
      std::cerr << "dpushard: error: " << e.what() << "\n";
      out.errors.push_back({{"index", i}, {"file", source.source(i)}, {"error", e.what()}});
      if (writer) writer->record_error(i, source.source(i), e.what());
      continue;
    }
    std::vector<QTensor> outputs;
    for (int r = 0; r < repeat; ++r) {
      const auto start = Clock::now();
      outputs = run(frame.inputs);
      out.latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    if (writer) writer->write(i, frame.source, outputs);
    nlohmann::json described = nlohmann::json::array();
    for (const QTensor& t : outputs) described.push_back(describe(t));
    out.results.push_back({{"index", i}, {"file", frame.source}, {"outputs", described}});
    if (out.first_outputs.empty()) {
      out.first_inputs = std::move(frame.inputs);
      out.first_outputs = std::move(outputs);
    }
  }
  if (writer) writer->finish();
  return out;
}

void print_notes(const FrameSource& source) {
  for (const std::string& note : source.notes()) std::cerr << note << "\n";
}

int frames_exit_code(const FramesRun& run) {
  if (run.errors.empty()) return 0;
  std::cerr << "dpushard: error: " << run.errors.size() << " of " << run.frames << " input"
            << (run.frames == 1 ? "" : "s") << " failed (named above)\n";
  return kExitFailure;
}

}  // namespace dpushard::cli
