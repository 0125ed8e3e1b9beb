// Calibration inputs: seeded random samples or a folder of .npy arrays.
#include <algorithm>
#include <random>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/quant/quantize.hpp"

namespace dpushard {
CalibrationSet random_calibration(const Graph& graph, int count, std::uint64_t seed) {
  if (count <= 0) throw Error("--calib-random needs a positive sample count");
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  CalibrationSet set;
  for (int i = 0; i < count; ++i) {
    std::vector<FloatTensor> sample;
    for (const Op* in : graph.inputs()) {
      FloatTensor t{in->output.shape,
                    std::vector<float>(static_cast<std::size_t>(in->output.element_count()))};
      for (auto& v : t.data) v = normal(rng);
      sample.push_back(std::move(t));
    }
    set.push_back(std::move(sample));
  }
  return set;
}

FloatTensor to_input_layout(const FloatTensor& t, const std::vector<std::int64_t>& ir_shape,
                            const std::string& who) {
  auto without_batch = [](const std::vector<std::int64_t>& s) {
    return std::vector<std::int64_t>(s.begin() + 1, s.end());
  };
  const bool batch_one = !ir_shape.empty() && ir_shape[0] == 1;
  if (ir_shape.size() == 4) {
    const std::vector<std::int64_t> nchw = {ir_shape[0], ir_shape[3], ir_shape[1], ir_shape[2]};
    if (t.shape == nchw || (batch_one && t.shape == without_batch(nchw))) {
      const std::int64_t n = ir_shape[0], h = ir_shape[1], w = ir_shape[2], c = ir_shape[3];
      FloatTensor out{ir_shape, std::vector<float>(t.data.size())};
      for (std::int64_t b = 0; b < n; ++b)
        for (std::int64_t k = 0; k < c; ++k)
          for (std::int64_t y = 0; y < h; ++y)
            for (std::int64_t x = 0; x < w; ++x)
              out.data[static_cast<std::size_t>(((b * h + y) * w + x) * c + k)] =
                  t.data[static_cast<std::size_t>(((b * c + k) * h + y) * w + x)];
      return out;
    }
  }
  if (t.shape == ir_shape || (batch_one && t.shape == without_batch(ir_shape)))
    return {ir_shape, t.data};
  throw Error(who + ": array of shape " + shape_text(t.shape) + " does not fit input shape " +
              shape_text(ir_shape) + (ir_shape.size() == 4 ? " (NHWC) nor its NCHW form" : ""));
}

CalibrationSet load_calibration(const Graph& graph, const std::filesystem::path& dir) {
  const auto inputs = graph.inputs();
  if (inputs.size() != 1)
    throw Error(dir.string() + ": calibration folders need a single-input model (this one has " +
                std::to_string(inputs.size()) + "); use --calib-random");
  const auto& ir_shape = inputs[0]->output.shape;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw Error(dir.string() + ": not a directory");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".npy") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error(dir.string() + ": no .npy files");
  CalibrationSet set;
  const std::int64_t per_sample = element_count(ir_shape);
  for (const auto& f : files) {
    const FloatTensor t = read_float_npy(f);
    const std::int64_t total = static_cast<std::int64_t>(t.data.size());
    // A batch of samples: [B, ...] where the input is [1, ...].
    if (!ir_shape.empty() && ir_shape[0] == 1 && t.shape.size() == ir_shape.size() &&
        t.shape[0] > 1 && total == t.shape[0] * per_sample) {
      std::vector<std::int64_t> row_shape = t.shape;
      row_shape[0] = 1;
      for (std::int64_t b = 0; b < t.shape[0]; ++b) {
        FloatTensor row{row_shape, std::vector<float>(t.data.begin() + b * per_sample,
                                                      t.data.begin() + (b + 1) * per_sample)};
        set.push_back({to_input_layout(row, ir_shape, f.string())});
      }
      continue;
    }
    set.push_back({to_input_layout(t, ir_shape, f.string())});
  }
  return set;
}

}  // namespace dpushard
