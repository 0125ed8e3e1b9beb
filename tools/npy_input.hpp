#pragma once
// Model inputs from NumPy .npy files, shared by `exec --input` and `run --input`: int8
// arrays are taken as they are, float32 arrays are quantized with the input's fix point
// and round mode. The array's shape must be the input's exactly; anything else is a
// one-line error naming the file and the input.

#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/numerics.hpp"
#include "dpushard/tensor.hpp"

namespace dpushard::cli {

struct InputSpec {
  std::string name;  // the input's fix op
  std::vector<std::int64_t> shape;
  int fix_point = 0;
  RoundMode round_mode = RoundMode::Dpu;
};

QTensor input_from_npy(const std::string& path, const InputSpec& spec);

// One file per input, in the model's input order; `who` names the model or plan in the
// error when the counts differ.
std::vector<QTensor> inputs_from_npy(const std::vector<std::string>& paths,
                                     const std::vector<InputSpec>& specs, const std::string& who);

}  // namespace dpushard::cli
