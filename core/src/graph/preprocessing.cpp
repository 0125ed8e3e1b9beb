#include "dpushard/graph/preprocessing.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string_view>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/attr.hpp"

namespace dpushard {
namespace {

constexpr std::string_view kMean = "dpushard_preprocess_mean";
constexpr std::string_view kStd = "dpushard_preprocess_std";
constexpr std::string_view kResize = "dpushard_preprocess_resize";
constexpr std::string_view kCrop = "dpushard_preprocess_crop";  // [height, width]

bool is_image_shape(const std::vector<std::int64_t>& shape) {
  return shape.size() == 4 && shape[0] == 1 && shape[1] > 0 && shape[2] > 0 && shape[3] == 3;
}

std::string shape_words(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::array<double, 3> triple(const Graph& graph, std::string_view key) {
  const auto* values = find_attr<std::vector<double>>(graph.attrs(), key);
  if (values == nullptr || values->size() != 3)
    throw Error("graph attribute '" + std::string(key) + "': expected 3 doubles (R, G, B)");
  return {(*values)[0], (*values)[1], (*values)[2]};
}

}  // namespace

Preprocessing default_preprocessing(const std::vector<std::int64_t>& shape,
                                    const std::string& input) {
  if (!is_image_shape(shape))
    throw Error("input '" + input + "' " + shape_words(shape) +
                " is not an image's (NHWC [1, H, W, 3])");
  Preprocessing p;
  p.crop_height = static_cast<int>(shape[1]);
  p.crop_width = static_cast<int>(shape[2]);
  p.resize = static_cast<int>(std::lround(double(std::max(shape[1], shape[2])) * 256.0 / 224.0));
  return p;
}

void check_preprocessing(const Preprocessing& p, const std::vector<std::int64_t>& shape,
                         const std::string& input) {
  if (!is_image_shape(shape))
    throw Error("input '" + input + "' " + shape_words(shape) +
                " is not an image's (NHWC [1, H, W, 3])");
  if (p.crop_height != shape[1] || p.crop_width != shape[2])
    throw Error("preprocessing: crop " + std::to_string(p.crop_height) + "x" +
                std::to_string(p.crop_width) + " is not input '" + input + "''s " +
                std::to_string(shape[1]) + "x" + std::to_string(shape[2]));
  if (p.resize < std::max(p.crop_height, p.crop_width))
    throw Error("preprocessing: resize " + std::to_string(p.resize) + " is smaller than the crop " +
                std::to_string(p.crop_height) + "x" + std::to_string(p.crop_width));
  for (double s : p.std)
    if (!(s > 0) || !std::isfinite(s))
      throw Error("preprocessing: std values must be positive and finite");
  for (double m : p.mean)
    if (!std::isfinite(m)) throw Error("preprocessing: mean values must be finite");
}

void record_preprocessing(Graph& graph, const Preprocessing& p) {
  graph.attrs()[std::string(kMean)] = std::vector<double>(p.mean.begin(), p.mean.end());
  graph.attrs()[std::string(kStd)] = std::vector<double>(p.std.begin(), p.std.end());
  graph.attrs()[std::string(kResize)] = std::int32_t{p.resize};
  graph.attrs()[std::string(kCrop)] = std::vector<std::int32_t>{p.crop_height, p.crop_width};
}

std::optional<Preprocessing> recorded_preprocessing(const Graph& graph) {
  const AttrMap& attrs = graph.attrs();
  const bool any = attrs.contains(kMean) || attrs.contains(kStd) || attrs.contains(kResize) ||
                   attrs.contains(kCrop);
  if (!any) return std::nullopt;
  Preprocessing p;
  p.mean = triple(graph, kMean);
  p.std = triple(graph, kStd);
  const auto* resize = find_attr<std::int32_t>(attrs, kResize);
  const auto* crop = find_attr<std::vector<std::int32_t>>(attrs, kCrop);
  if (resize == nullptr || *resize <= 0)
    throw Error("graph attribute '" + std::string(kResize) + "': expected a positive int32");
  if (crop == nullptr || crop->size() != 2 || (*crop)[0] <= 0 || (*crop)[1] <= 0)
    throw Error("graph attribute '" + std::string(kCrop) +
                "': expected 2 positive int32 (height, width)");
  p.resize = *resize;
  p.crop_height = (*crop)[0];
  p.crop_width = (*crop)[1];
  return p;
}

void copy_preprocessing(const Graph& from, Graph& to) {
  for (std::string_view key : {kMean, kStd, kResize, kCrop})
    if (const auto it = from.attrs().find(key); it != from.attrs().end())
      to.attrs()[std::string(key)] = it->second;
}

std::string preprocessing_text(const Preprocessing& p) {
  std::ostringstream s;
  const auto list = [&](const std::array<double, 3>& v) {
    s << v[0] << "," << v[1] << "," << v[2];
  };
  s << "mean ";
  list(p.mean);
  s << " std ";
  list(p.std);
  s << " resize " << p.resize << " crop " << p.crop_height << "x" << p.crop_width;
  return s.str();
}

}  // namespace dpushard
