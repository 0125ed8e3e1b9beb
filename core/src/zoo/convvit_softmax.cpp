// The ConvViT with softmax attention (`zoo convvit --attention softmax`): the patch stem
// (convvit.hpp) giving tokens [1, T, D]; K experts of pre-norm transformer blocks
// (multi-head attention and a GELU MLP, both residual); a join; and a tail with layernorm,
// mean over tokens, a ReLU pre-logits layer and the classifier. Its activation products,
// softmax, GELU and layernorm are CPU ops on the KV260 (docs/zoo.md).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "convvit.hpp"
#include "dpushard/zoo/zoo.hpp"
#include "family.hpp"
#include "model_builder.hpp"
#include "moments.hpp"
#include "size_solver.hpp"

namespace dpushard::zoo {
namespace {

constexpr std::int64_t kMlpRatio = 4;

// Head size 32 for narrow models, 64 from a width of 256 on.
std::int64_t head_dim(std::int64_t dim) { return dim < 256 ? 32 : 64; }

ShapeCandidate convvit_candidate(const ZooSpec& spec, int blocks, std::int64_t dim,
                                 std::int64_t hidden) {
  const std::int64_t stem = convvit_stem_params(spec, dim);
  // Two layernorms (2D each), q/k/v/proj (D^2 + D each), fc1 (DH + H), fc2 (HD + D).
  const std::int64_t block = 4 * dim * dim + 2 * dim * hidden + 9 * dim + hidden;
  const std::int64_t joined = joined_channels(spec, dim);
  ShapeCandidate c;
  c.widths = {dim, hidden};
  c.base = stem + spec.experts * blocks * block + 2 * joined + spec.classes;
  c.slope = joined + 1 + spec.classes;  // pre-logits weights + bias, classifier row
  c.tail_nominal = std::max<std::int64_t>(64, dim);
  c.misfit = std::abs(std::log(static_cast<double>(hidden) / static_cast<double>(kMlpRatio * dim)));
  return c;
}

// [1, T, D] -> [1, H, T, D/H].
Act split_heads(ModelBuilder& b, const std::string& name, const Act& x, std::int64_t heads) {
  const std::int64_t tokens = x.value.shape[1];
  const std::int64_t dim = x.value.shape[2];
  const Act split = b.reshape(name + "_heads", x, {1, tokens, heads, dim / heads});
  return b.transpose(name + "_by_head", split, {0, 2, 1, 3});
}

Act attention(ModelBuilder& b, const std::string& name, const Act& x) {
  const std::int64_t tokens = x.value.shape[1];
  const std::int64_t dim = x.value.shape[2];
  const std::int64_t dh = head_dim(dim);
  const std::int64_t heads = dim / dh;
  const double t = static_cast<double>(tokens);

  const Act n = b.layernorm(name + "/norm", x);
  const Act k = b.linear(name + "/k", n, dim, /*relu=*/false);
  const Act v = b.linear(name + "/v", n, dim, /*relu=*/false);
  // The 1/sqrt(d) scale of attention is folded into W_q as a power of two: it sets the
  // spread of one query's logits over the keys, dh * E[q^2] * spread(k), close to 1.
  const double q_m2 = after_linear(n.moments, weight_gain(dim, 0), 0.0).m2();
  const double raw_spread = static_cast<double>(dh) * q_m2 * k.moments.spread;
  const int q_shift =
      raw_spread > 0.0 ? static_cast<int>(std::lround(0.5 * std::log2(raw_spread))) : 0;
  const Act q = b.linear(name + "/q", n, dim, /*relu=*/false, q_shift);

  const double logit_var = static_cast<double>(dh) * q.moments.m2() * k.moments.spread;
  const Moments logits{
      0.0, static_cast<double>(dh) * q.moments.m2() * (k.moments.m2() - k.moments.spread),
      logit_var};
  const Act scores = b.matmul(name + "/scores", split_heads(b, name + "/q", q, heads),
                              split_heads(b, name + "/k", k, heads), /*transpose_b=*/true, logits);

  // Softmax over T keys with logits of spread s: mean 1/T, E[p^2] = e^{s^2} / T^2, and a
  // row maximum near e^{s sqrt(2 ln T) - s^2/2} / T, which sets the fix point.
  const double s = std::sqrt(logit_var);
  const double p_m2 = std::exp(logit_var) / (t * t);
  const double p_max = std::min(
      1.0, std::exp(s * std::sqrt(2.0 * std::log(std::max(t, 1.0))) - 0.5 * logit_var) / t);
  const int p_fp = static_cast<int>(std::floor(std::log2(127.0 / p_max)));
  const Act probs = b.softmax(name + "/softmax", scores, 3, p_fp,
                              Moments{1.0 / t, 0.0, std::max(p_m2 - 1.0 / (t * t), 0.0)});

  // Rows of p sum to one: the value's per-channel part passes, its per-token part is
  // averaged with weights p.
  const Moments context_model{v.moments.mean, v.moments.shared, t * p_m2 * v.moments.spread};
  const Act context = b.matmul(name + "/context", probs, split_heads(b, name + "/v", v, heads),
                               /*transpose_b=*/false, context_model);
  const Act merged = b.reshape(
      name + "/merge", b.transpose(name + "/by_token", context, {0, 2, 1, 3}), {1, tokens, dim});
  const Act projected = b.linear(name + "/proj", merged, dim, /*relu=*/false);
  return b.add(name + "/residual", {x, projected}, /*relu=*/false);
}

Act mlp(ModelBuilder& b, const std::string& name, const Act& x, std::int64_t hidden) {
  const std::int64_t dim = x.value.shape[2];
  Act h = b.layernorm(name + "/norm", x);
  h = b.linear(name + "/fc1", h, hidden, /*relu=*/false);
  h = b.gelu(name + "/gelu", h);
  h = b.linear(name + "/fc2", h, dim, /*relu=*/false);
  return b.add(name + "/residual", {x, h}, /*relu=*/false);
}

}  // namespace

Graph make_convvit_softmax(const ZooSpec& spec) {
  check_spec(spec, "convvit");
  const ConvVitShape plan =
      solve_convvit_shape(spec, [&spec](int blocks, std::int64_t dim, std::int64_t hidden) {
        return convvit_candidate(spec, blocks, dim, hidden);
      });

  ModelBuilder b("zoo_convvit", spec.seed, spec.weights);
  Act x = convvit_patch_stem(b, spec, plan.dim);
  const std::int64_t grid_h = x.value.shape[1];
  const std::int64_t grid_w = x.value.shape[2];
  x = b.reshape("stem/tokens", x, {1, grid_h * grid_w, plan.dim});

  std::vector<Act> experts;
  for (int e = 0; e < spec.experts; ++e)
    experts.push_back(convvit_blocks(
        expert_prefix(e), x, plan.blocks,
        [&b](const std::string& name, const Act& in) { return attention(b, name, in); },
        [&b, &plan](const std::string& name, const Act& in) {
          return mlp(b, name, in, plan.hidden);
        }));
  x = join_experts(b, experts, spec.join, /*channel_axis=*/2);

  const std::int64_t channels = x.value.shape[2];
  x = b.layernorm("tail/norm", x);
  // Mean over tokens as a global average pool over the token grid.
  x = b.reshape("tail/grid", x, {1, grid_h, grid_w, channels});
  x = b.global_avgpool("tail/pool", x);
  x = b.reshape("tail/flatten", x, {1, channels});
  x = b.linear("tail/prelogits", x, plan.tail, /*relu=*/true);
  b.linear("classifier", x, spec.classes, /*relu=*/false);
  return b.finish();
}

}  // namespace dpushard::zoo
