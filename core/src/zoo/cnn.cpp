// The CNN family: conv stem (three stride-2 3x3 convs, 8x downsampling), K experts of
// residual conv stacks (an entry conv, stage 1 at width W1, a stride-2 conv to W2 ~ 2 W1,
// stage 2),
// a join, and a tail conv1x1 + global average pool + classifier.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/zoo/zoo.hpp"
#include "family.hpp"
#include "model_builder.hpp"
#include "size_solver.hpp"

namespace dpushard {
namespace {

using zoo::Act;
using zoo::conv_params;
using zoo::ModelBuilder;

constexpr std::int64_t kCnnStem[3] = {16, 32, 64};
constexpr std::int64_t kWidthStep = 16;
constexpr std::int64_t kMaxWidth = 4096;  // the DPU's output channel limit

struct CnnDepth {
  int stage1 = 1;  // residual blocks at width W
  int stage2 = 1;  // residual blocks at width 2W
};

struct CnnPlan {
  CnnDepth depth;
  std::int64_t width1 = 0;  // stage 1 (and the entry conv)
  std::int64_t width2 = 0;  // stage 2, ideally 2 * width1
  std::int64_t tail = 0;
};

// Deeper experts for bigger per-expert budgets.
CnnDepth cnn_depth(std::int64_t params_per_expert) {
  if (params_per_expert < 1'000'000) return {1, 1};
  if (params_per_expert < 10'000'000) return {2, 2};
  if (params_per_expert < 50'000'000) return {2, 3};
  return {3, 4};
}

zoo::ShapeCandidate cnn_candidate(const ZooSpec& spec, const CnnDepth& depth, std::int64_t width1,
                                  std::int64_t width2) {
  const std::int64_t stem = conv_params(3, spec.input[2], kCnnStem[0]) +
                            conv_params(3, kCnnStem[0], kCnnStem[1]) +
                            conv_params(3, kCnnStem[1], kCnnStem[2]);
  const std::int64_t expert =
      conv_params(3, kCnnStem[2], width1) + depth.stage1 * 2 * conv_params(3, width1, width1) +
      conv_params(3, width1, width2) + depth.stage2 * 2 * conv_params(3, width2, width2);
  const std::int64_t joined = zoo::joined_channels(spec, width2);
  zoo::ShapeCandidate c;
  c.widths = {width1, width2};
  c.base = stem + spec.experts * expert + spec.classes;  // + classifier bias
  c.slope = joined + 1 + spec.classes;  // tail conv1x1 weights + bias, classifier row
  c.tail_nominal = std::max<std::int64_t>(64, width2);
  c.misfit = std::abs(std::log(static_cast<double>(width2) / static_cast<double>(2 * width1)));
  return c;
}

CnnPlan plan_cnn(const ZooSpec& spec) {
  CnnPlan plan;
  plan.depth = cnn_depth(spec.params / spec.experts);
  // Stage 2 between 1.5x and 2.5x stage 1, both multiples of 16.
  std::vector<zoo::ShapeCandidate> candidates;
  for (std::int64_t w1 = kWidthStep; w1 <= kMaxWidth / 2; w1 += kWidthStep) {
    const std::int64_t lo = std::max(kWidthStep, (3 * w1 / 2) / kWidthStep * kWidthStep);
    const std::int64_t hi = std::min(kMaxWidth, (5 * w1 / 2) / kWidthStep * kWidthStep);
    for (std::int64_t w2 = lo; w2 <= hi; w2 += kWidthStep)
      candidates.push_back(cnn_candidate(spec, plan.depth, w1, w2));
  }
  const zoo::SizeChoice choice = zoo::solve_size("cnn", spec.params, candidates);
  plan.width1 = choice.widths[0];
  plan.width2 = choice.widths[1];
  plan.tail = choice.tail;
  return plan;
}

// conv3x3 + relu, conv3x3, add the skip, relu.
Act residual_block(ModelBuilder& b, const std::string& name, const Act& x) {
  const std::int64_t channels = x.value.shape.back();
  Act h = b.conv(name + "/conv1", x, channels, 3, 1, 1, /*relu=*/true);
  h = b.conv(name + "/conv2", h, channels, 3, 1, 1, /*relu=*/false);
  return b.add(name + "/add", {x, h}, /*relu=*/true);
}

Act cnn_expert(ModelBuilder& b, const std::string& prefix, const Act& stem, const CnnPlan& plan) {
  Act x = b.conv(prefix + "entry", stem, plan.width1, 3, 1, 1, /*relu=*/true);
  for (int i = 0; i < plan.depth.stage1; ++i)
    x = residual_block(b, prefix + "stage1/block" + std::to_string(i), x);
  x = b.conv(prefix + "stage2/down", x, plan.width2, 3, 2, 1, /*relu=*/true);
  for (int i = 0; i < plan.depth.stage2; ++i)
    x = residual_block(b, prefix + "stage2/block" + std::to_string(i), x);
  return x;
}

}  // namespace

Graph make_cnn(const ZooSpec& spec) {
  zoo::check_spec(spec, "cnn");
  const CnnPlan plan = plan_cnn(spec);

  ModelBuilder b("zoo_cnn", spec.seed, spec.weights);
  Act x = b.input("input", {1, spec.input[0], spec.input[1], spec.input[2]}, zoo::kInputFixPoint);
  for (int i = 0; i < 3; ++i)
    x = b.conv("stem/conv" + std::to_string(i + 1), x, kCnnStem[i], 3, 2, 1, /*relu=*/true);

  std::vector<Act> experts;
  for (int e = 0; e < spec.experts; ++e)
    experts.push_back(cnn_expert(b, zoo::expert_prefix(e), x, plan));
  x = zoo::join_experts(b, experts, spec.join, /*channel_axis=*/3);

  x = b.conv("tail/conv", x, plan.tail, 1, 1, 0, /*relu=*/true);
  x = b.global_avgpool("tail/pool", x);
  x = b.reshape("tail/flatten", x, {1, plan.tail});
  b.linear("classifier", x, spec.classes, /*relu=*/false);
  return b.finish();
}

}  // namespace dpushard
