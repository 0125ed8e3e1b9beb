#pragma once
// Each frame's outputs written to a folder (`--output DIR` of `exec` and `run --local`):
//   DIR/NNNNNN.OUTPUT.npy          int8 as computed (NNNNNN: the frame's index in input order)
//   DIR/NNNNNN.OUTPUT.float32.npy  dequantized (value * 2^-fix_point), with `float32`
//   DIR/frames.jsonl               one line per input: index, file, the files written or the error
//   DIR/predictions.jsonl          a classifier's (one output holding a single row of >= 2
//                                  values): per input, the top-k classes and their scores,
//                                  the dequantized logits (no softmax)
// Every file is written atomically (atomic_file.hpp); the .jsonl files at finish(), their
// lines in input order whatever order the frames were written in, so a cluster run that
// completes frames out of order can use it too.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpushard/graph/tensor.hpp"

namespace dpushard {

struct FrameOutputOptions {
  std::filesystem::path dir;
  bool float32 = false;
  int top_k = 5;
};

// True for an output a classifier gives: a single row of at least 2 values ([1, C] or [C]).
bool is_classifier_output(const QTensor& tensor);

// The top-k classes of a classifier output, highest int8 value first, ties to the lower
// index: [{"class": i, "score": dequantized value}, ...].
nlohmann::json top_k_classes(const QTensor& tensor, int k);

class FrameOutputWriter {
 public:
  // Creates DIR (and its parents) when missing; a path that is not a folder is refused.
  explicit FrameOutputWriter(FrameOutputOptions options);

  // Writes frame `index`'s outputs (from input file `source`). An output a timing-only
  // backend did not compute is refused naming it.
  void write(std::size_t index, const std::string& source, const std::vector<QTensor>& outputs);
  // Records that frame `index` (from `source`) failed with `message`.
  void record_error(std::size_t index, const std::string& source, const std::string& message);
  // Writes frames.jsonl and, for a classifier, predictions.jsonl.
  void finish();

  const FrameOutputOptions& options() const { return options_; }

 private:
  FrameOutputOptions options_;
  std::map<std::size_t, nlohmann::json> frames_;       // by index: frames.jsonl's lines
  std::map<std::size_t, nlohmann::json> predictions_;  // by index
  bool classifier_ = true;  // every written frame had one classifier output
};

// An output's name as a file name: characters other than [A-Za-z0-9._-] become '_'.
std::string output_file_stem(const std::string& output_name);

}  // namespace dpushard
