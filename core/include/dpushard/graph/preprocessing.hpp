#pragma once
// How an image becomes a model input, recorded with the model by `import` (--mean, --std,
// --resize, --crop) and shown by `inspect`: the torchvision transform
//   Resize(resize) -> CenterCrop(crop) -> ToTensor() -> Normalize(mean, std)
// on an RGB image, then NHWC int8 at the input's fix point (docs/inference.md). Stored as
// graph attributes `dpushard_preprocess_{mean,std,resize,crop}`, which the planner copies
// into every fragment, so a plan's fragments carry it too.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

struct Preprocessing {
  std::array<double, 3> mean{0.485, 0.456, 0.406};  // RGB, after /255 (ImageNet's)
  std::array<double, 3> std{0.229, 0.224, 0.225};
  int resize = 256;  // the shorter side after resizing (bilinear, antialiased as PIL does)
  int crop_height = 224;
  int crop_width = 224;
  bool operator==(const Preprocessing&) const = default;
};

// The defaults for an NHWC input of `shape` ([1, H, W, 3]): ImageNet's mean and std, a crop
// of H x W and a resize of round(max(H, W) * 256 / 224) (256 for 224). Throws naming
// `input` when the shape is not an image's.
Preprocessing default_preprocessing(const std::vector<std::int64_t>& shape,
                                    const std::string& input);

// Throws a one-line dpushard::Error when the block cannot be applied to an input of `shape`
// (crop other than the input's H x W, resize smaller than the crop, std not positive).
void check_preprocessing(const Preprocessing& p, const std::vector<std::int64_t>& shape,
                         const std::string& input);

void record_preprocessing(Graph& graph, const Preprocessing& p);
// The recorded block, or nothing when the model has none; a partial or malformed block
// throws naming the attribute.
std::optional<Preprocessing> recorded_preprocessing(const Graph& graph);
// Copies the recorded block's attributes (if any) from `from` into `to`.
void copy_preprocessing(const Graph& from, Graph& to);

// "mean 0.485,0.456,0.406 std 0.229,0.224,0.225 resize 256 crop 224x224"
std::string preprocessing_text(const Preprocessing& p);

}  // namespace dpushard
