#include "perf/resnets.hpp"

#include <string>
#include <vector>

#include "dpushard/graph/builder.hpp"

namespace dpushard::testing {
namespace {

class ResNetBuilder {
 public:
  explicit ResNetBuilder(const std::string& name) : b_(name) {}

  Value conv(const std::string& name, const Value& x, std::int64_t out, std::int64_t k,
             std::int64_t stride, bool relu) {
    const std::int64_t in = x.shape.back();
    const Value w =
        b_.constant(name + "_w", {out, k, k, in},
                    std::vector<std::int8_t>(static_cast<std::size_t>(out * k * k * in), 1), 7);
    const Value bias = b_.constant(name + "_b", {out},
                                   std::vector<std::int8_t>(static_cast<std::size_t>(out), 1), 5);
    Conv2dSpec spec;
    spec.kernel = {k, k};
    spec.stride = {stride, stride};
    const std::int64_t pad = k / 2;
    spec.pad = {pad, pad, pad, pad};
    spec.nonlinear = relu ? Nonlinear::Relu : Nonlinear::None;
    return b_.conv2d(name, x, w, bias, spec, 4);
  }

  Value bottleneck(const std::string& name, const Value& x, std::int64_t width,
                   std::int64_t stride) {
    const std::int64_t out = width * 4;
    Value h = conv(name + "_conv1", x, width, 1, 1, true);
    h = conv(name + "_conv2", h, width, 3, stride, true);
    h = conv(name + "_conv3", h, out, 1, 1, false);
    const Value skip = (stride != 1 || x.shape.back() != out)
                           ? conv(name + "_downsample", x, out, 1, stride, false)
                           : x;
    return b_.add(name + "_add", {h, skip}, 4, Nonlinear::Relu);
  }

  Value basic(const std::string& name, const Value& x, std::int64_t width, std::int64_t stride) {
    Value h = conv(name + "_conv1", x, width, 3, stride, true);
    h = conv(name + "_conv2", h, width, 3, 1, false);
    const Value skip = (stride != 1 || x.shape.back() != width)
                           ? conv(name + "_downsample", x, width, 1, stride, false)
                           : x;
    return b_.add(name + "_add", {h, skip}, 4, Nonlinear::Relu);
  }

  Value stem() {
    const Value x = b_.input("input", {1, 224, 224, 3}, 6);
    const Value h = conv("conv1", x, 64, 7, 2, true);
    Pool2dSpec pool;
    pool.kernel = {3, 3};
    pool.stride = {2, 2};
    pool.pad = {1, 1, 1, 1};
    return b_.maxpool2d("maxpool", h, pool);
  }

  Graph head(const Value& x) {
    Pool2dSpec gap;
    gap.global = true;
    const Value pooled = b_.avgpool2d("avgpool", x, gap, 4);
    const Value flat = b_.flatten("flatten", pooled, 1, -1);
    const std::int64_t k = flat.shape.back();
    const Value w = b_.constant("fc_w", {1000, k},
                                std::vector<std::int8_t>(static_cast<std::size_t>(1000 * k), 1), 8);
    const Value bias = b_.constant("fc_b", {1000}, std::vector<std::int8_t>(1000, 1), 6);
    b_.matmul("fc", flat, w, bias, /*transpose_b=*/true, 3);
    return b_.finish();
  }

 private:
  GraphBuilder b_;
};

}  // namespace

Graph make_resnet50() {
  ResNetBuilder r("resnet50");
  Value x = r.stem();
  const std::int64_t widths[4] = {64, 128, 256, 512};
  const int blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s)
    for (int i = 0; i < blocks[s]; ++i)
      x = r.bottleneck("layer" + std::to_string(s + 1) + "_" + std::to_string(i), x, widths[s],
                       (i == 0 && s > 0) ? 2 : 1);
  return r.head(x);
}

Graph make_resnet18() {
  ResNetBuilder r("resnet18");
  Value x = r.stem();
  const std::int64_t widths[4] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s)
    for (int i = 0; i < 2; ++i)
      x = r.basic("layer" + std::to_string(s + 1) + "_" + std::to_string(i), x, widths[s],
                  (i == 0 && s > 0) ? 2 : 1);
  return r.head(x);
}

}  // namespace dpushard::testing
