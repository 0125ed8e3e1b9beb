#include "dpushard/frames/frame_source.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/base/npy.hpp"
#include "dpushard/frames/image.hpp"

namespace dpushard {
namespace fs = std::filesystem;
namespace {

std::string numpy_shape_text(const std::vector<std::int64_t>& shape) {
  std::ostringstream s;
  s << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? "," : "") << shape[i];
  s << (shape.size() == 1 ? ",)" : ")");
  return s.str();
}

std::int64_t element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

void check_dtype(const NpyArray& array, const std::string& label) {
  if (array.type != NpyArray::Type::Int8 && array.type != NpyArray::Type::Float32)
    throw Error(label + ": dtype '" + npy_descr(array.type) +
                "' is not supported here (int8 '|i1' as is, or float32 '<f4' to quantize)");
}

// Frame `frame` of `array` (a batch, or one frame when frame == 0 and it has the input's
// shape) as the input's tensor.
QTensor slice(const NpyArray& array, std::int64_t frame, const InputSpec& spec,
              const std::string& label) {
  const std::int64_t n = element_count(spec.shape);
  const std::size_t item = npy_item_size(array.type);
  const std::string bytes = array.data.substr(std::size_t(frame * n) * item, std::size_t(n) * item);
  QTensor t{spec.name, spec.shape, spec.fix_point, {}};
  t.data.reserve(std::size_t(n));
  if (array.type == NpyArray::Type::Int8) {
    for (char c : bytes) t.data.push_back(static_cast<std::int8_t>(c));
    return t;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    float v = 0;
    std::memcpy(&v, bytes.data() + i * 4, 4);
    if (!std::isfinite(v))
      throw Error(label + ": value at index " + std::to_string(frame * n + i) + " is not finite");
    t.data.push_back(quantize(double{v}, spec.fix_point, spec.round_mode));
  }
  return t;
}

// How many frames `shape` holds for `spec`: 1 for the input's shape, N for [N] + shape, or N
// for [N] + shape[1:] when the input's first axis is 1; 0 when it fits neither.
std::int64_t frames_in(const std::vector<std::int64_t>& shape, const InputSpec& spec) {
  if (shape == spec.shape) return 1;
  if (shape.size() == spec.shape.size() + 1 &&
      std::equal(spec.shape.begin(), spec.shape.end(), shape.begin() + 1))
    return shape[0];
  if (!spec.shape.empty() && spec.shape[0] == 1 && shape.size() == spec.shape.size() &&
      std::equal(spec.shape.begin() + 1, spec.shape.end(), shape.begin() + 1))
    return shape[0];
  return 0;
}

std::string shape_mismatch(const std::string& label, const std::vector<std::int64_t>& shape,
                           const InputSpec& spec, bool batches) {
  return label + ": shape " + numpy_shape_text(shape) + " does not match input '" + spec.name +
         "' " + numpy_shape_text(spec.shape) + (batches ? " or a batch of it" : "") +
         " (int8 as is, or float32 to quantize at fix point " + std::to_string(spec.fix_point) +
         ")";
}

bool is_npy(const fs::path& path) { return path.extension() == ".npy"; }

}  // namespace

QTensor tensor_from_npy(const fs::path& path, const InputSpec& spec) {
  const std::string label = path.string();
  const NpyArray array = read_npy(path);
  check_dtype(array, label);
  if (array.shape != spec.shape &&
      !(array.shape.size() == spec.shape.size() + 1 && frames_in(array.shape, spec) == 1))
    throw Error(shape_mismatch(label, array.shape, spec, false));
  return slice(array, 0, spec, label);
}

QTensor tensor_from_image(const fs::path& path, const InputSpec& spec, const Preprocessing& p) {
  const std::vector<float> values = preprocess_image(decode_image(path), p);
  QTensor t{spec.name, spec.shape, spec.fix_point, {}};
  t.data.reserve(values.size());
  for (float v : values) t.data.push_back(quantize(double{v}, spec.fix_point, spec.round_mode));
  return t;
}

// One model input's frames: the frames of one .npy batch, or one file per frame.
struct FrameSource::Input {
  std::string batch_path;   // in errors
  std::string batch_label;  // in source(): the file's name
  std::shared_ptr<const NpyArray> batch;
  std::int64_t batch_frames = 0;
  std::vector<fs::path> files;
  std::optional<Preprocessing> preprocessing;  // set when a file is an image
  std::optional<std::uint64_t> seed;           // one frame of random int8 values

  std::size_t size() const {
    if (seed) return 1;
    return batch ? std::size_t(batch_frames) : files.size();
  }
  bool has_images() const {
    return std::any_of(files.begin(), files.end(),
                       [](const fs::path& f) { return is_image_file_name(f); });
  }
};

FrameSource::FrameSource(const std::vector<std::string>& paths, std::vector<InputSpec> specs,
                         std::optional<Preprocessing> preprocessing, const std::string& who)
    : specs_(std::move(specs)) {
  if (paths.size() != specs_.size())
    throw Error(who + ": the model has " + std::to_string(specs_.size()) + " input" +
                (specs_.size() == 1 ? "" : "s") + ", got " + std::to_string(paths.size()) +
                " --input file" + (paths.size() == 1 ? "" : "s"));
  for (std::size_t k = 0; k < paths.size(); ++k) {
    const fs::path path = paths[k];
    const InputSpec& spec = specs_[k];
    auto input = std::make_unique<Input>();
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (!fs::exists(status)) throw Error(path.string() + ": no such file or folder");
    if (fs::is_directory(status)) {
      std::size_t skipped = 0;
      for (const auto& entry : fs::directory_iterator(path)) {
        const fs::path& file = entry.path();
        if (file.filename().string().starts_with(".")) continue;
        if (is_npy(file) || is_image_file_name(file))
          input->files.push_back(file);
        else
          ++skipped;
      }
      std::sort(input->files.begin(), input->files.end());
      if (input->files.empty())
        throw Error(path.string() + ": the folder holds no .npy, .jpg, .jpeg or .png files");
      if (skipped > 0)
        notes_.push_back(path.string() + ": " + std::to_string(skipped) +
                         " file(s) that are not .npy or images left out");
    } else if (is_image_file_name(path)) {
      input->files.push_back(path);
    } else {
      // A .npy (by content, whatever its name): one frame or a batch.
      auto array = std::make_shared<NpyArray>(read_npy(path));
      check_dtype(*array, path.string());
      const std::int64_t frames = frames_in(array->shape, spec);
      if (frames <= 0) throw Error(shape_mismatch(path.string(), array->shape, spec, true));
      input->batch_path = path.string();
      input->batch_label = path.filename().string();
      input->batch = std::move(array);
      input->batch_frames = frames;
    }
    if (input->has_images()) {
      if (!images_supported()) decode_image(input->files.front());  // throws the one line
      if (preprocessing) {
        check_preprocessing(*preprocessing, spec.shape, spec.name);
        input->preprocessing = preprocessing;
      } else {
        input->preprocessing = default_preprocessing(spec.shape, spec.name);
        notes_.push_back("no preprocessing recorded with the model: images for input '" +
                         spec.name + "' use the defaults " +
                         preprocessing_text(*input->preprocessing) +
                         " (import --mean/--std/--resize/--crop records them)");
      }
    }
    if (k > 0 && input->size() != inputs_.front()->size())
      throw Error(path.string() + ": " + std::to_string(input->size()) + " frame(s) for input '" +
                  spec.name + "', but " + std::to_string(inputs_.front()->size()) + " for '" +
                  specs_.front().name + "' (" + paths.front() + ")");
    inputs_.push_back(std::move(input));
  }
  size_ = inputs_.empty() ? 0 : inputs_.front()->size();
}

FrameSource::FrameSource(std::vector<InputSpec> specs, std::uint64_t seed)
    : specs_(std::move(specs)), size_(1) {
  for (std::size_t k = 0; k < specs_.size(); ++k) {
    inputs_.push_back(std::make_unique<Input>());
    inputs_.back()->seed = seed;
  }
}

FrameSource::~FrameSource() = default;
FrameSource::FrameSource(FrameSource&&) noexcept = default;
FrameSource& FrameSource::operator=(FrameSource&&) noexcept = default;

std::size_t FrameSource::size() const { return size_; }

const std::vector<std::string>& FrameSource::notes() const { return notes_; }

std::string FrameSource::source(std::size_t index) const {
  if (inputs_.empty() || index >= size_)
    throw Error("frame " + std::to_string(index) + " out of range");
  const Input& in = *inputs_.front();
  if (in.seed) return "seed " + std::to_string(*in.seed);
  if (!in.batch) return in.files[index].filename().string();
  if (in.batch_frames == 1 && in.batch->shape == specs_.front().shape) return in.batch_label;
  return in.batch_label + "[" + std::to_string(index) + "]";
}

Frame FrameSource::frame(std::size_t index) const {
  Frame f{index, source(index), {}};
  for (std::size_t k = 0; k < inputs_.size(); ++k) {
    const Input& in = *inputs_[k];
    const InputSpec& spec = specs_[k];
    if (in.seed) {
      f.inputs.push_back(random_qtensor(spec.name, spec.shape, spec.fix_point, *in.seed));
    } else if (in.batch) {
      f.inputs.push_back(slice(*in.batch, std::int64_t(index), spec, in.batch_path));
    } else if (is_image_file_name(in.files[index])) {
      f.inputs.push_back(tensor_from_image(in.files[index], spec, *in.preprocessing));
    } else {
      f.inputs.push_back(tensor_from_npy(in.files[index], spec));
    }
  }
  return f;
}

}  // namespace dpushard
