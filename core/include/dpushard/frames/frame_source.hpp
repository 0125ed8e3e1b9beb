#pragma once
// Model inputs as an ordered sequence of frames, from what `--input` names (one path per
// model input): a .npy holding one frame (the input's shape) or a batch (first axis =
// frames, the rest the input's shape, with or without its leading 1), an image file (JPEG,
// PNG), or a folder of .npy and image files taken in name order. int8 arrays are taken as
// they are, float32 arrays are quantized at the input's fix point with its round mode, and
// images go through the model's preprocessing block (preprocessing.hpp).
//
// `exec` and `run --local` read frames through it; a cluster run can too: size() frames,
// frame(i) each, in any order and from any thread (frame() only reads).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/numerics.hpp"
#include "dpushard/graph/preprocessing.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard {

// What one model input takes: its fix op, NHWC shape, fix point and round mode.
struct InputSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  int fix_point = 0;
  RoundMode round_mode = RoundMode::Dpu;
};

// One frame: a tensor per model input, in the model's input order, and where it came from
// ("cat.jpg", "batch.npy[3]"; with several inputs, the first input's).
struct Frame {
  std::size_t index = 0;
  std::string source;
  std::vector<QTensor> inputs;
};

// The .npy at `path` as one frame of `spec` (shape exactly the input's): the one reader
// of a frame's .npy (dtype int8 as is or float32 quantized; anything else one line naming
// the file and the input).
QTensor tensor_from_npy(const std::filesystem::path& path, const InputSpec& spec);

// An image file through `p` (decode_image, preprocess_image), quantized for `spec`.
QTensor tensor_from_image(const std::filesystem::path& path, const InputSpec& spec,
                          const Preprocessing& p);

class FrameSource {
 public:
  // `paths`: one per model input (specs). `preprocessing`: the model's recorded block; when
  // absent and an input is an image, the defaults for its shape are used and notes() says
  // so. Throws one dpushard::Error for what leaves no frames to run: a count of paths
  // other than the inputs', a missing path, a .npy whose shape fits neither one frame nor a
  // batch, an empty folder, inputs with different frame counts. `who` names the model or
  // plan in the count error.
  FrameSource(const std::vector<std::string>& paths, std::vector<InputSpec> specs,
              std::optional<Preprocessing> preprocessing, const std::string& who);
  // One frame of seeded random int8 tensors (random_qtensor), as `exec --seed S` runs.
  FrameSource(std::vector<InputSpec> specs, std::uint64_t seed);
  ~FrameSource();
  FrameSource(FrameSource&&) noexcept;
  FrameSource& operator=(FrameSource&&) noexcept;

  std::size_t size() const;
  // Where frame `index` comes from, without reading it.
  std::string source(std::size_t index) const;
  // Frame `index`'s tensors. A file that cannot be read (a corrupt or truncated image, a
  // .npy of the wrong shape in a folder) throws one dpushard::Error naming it: the caller
  // reports that frame and goes on with the next.
  Frame frame(std::size_t index) const;
  // Lines for the user (stderr): files a folder holds that are not frames, defaults used.
  const std::vector<std::string>& notes() const;

 private:
  struct Input;
  std::vector<InputSpec> specs_;
  std::vector<std::unique_ptr<Input>> inputs_;
  std::vector<std::string> notes_;
  std::size_t size_ = 0;
};

}  // namespace dpushard
