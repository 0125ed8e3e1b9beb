#include "fused_epilogue.hpp"

#include <cmath>

#include "../lowering/epilogue.hpp"

namespace dpushard::cpu {

std::optional<FusedEpilogue> fused_epilogue(const lowering::Chain& chain, int acc_exp,
                                            int acc_align, int bias_align, const QTensor* bias,
                                            std::int64_t channels) {
  const lowering::Epilogue epilogue(chain, acc_exp);
  using Kind = lowering::Epilogue::Kind;
  const Kind kind = epilogue.kind();
  const int cut = epilogue.cut();
  if (kind != Kind::None && kind != Kind::Relu && kind != Kind::Relu6) return std::nullopt;
  if (cut < 1 || cut > 15 || bias_align > 15 || acc_align > 15) return std::nullopt;

  FusedEpilogue fused;
  const float half = std::ldexp(1.0f, -(acc_align + 1));
  fused.bias.assign(static_cast<std::size_t>(channels), half);
  if (bias != nullptr)
    for (std::size_t c = 0; c < fused.bias.size(); ++c)
      fused.bias[c] += std::ldexp(static_cast<float>(bias->data[c]), bias_align - acc_align);
  fused.attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  fused.attr.set_output_scales(0, {std::ldexp(1.0f, acc_align - cut)});
  dnnl::post_ops ops;
  if (kind == Kind::Relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  if (kind == Kind::Relu6) {
    if (epilogue.relu6_max() >= (std::int64_t{1} << 22)) return std::nullopt;
    const float top = std::ldexp(static_cast<float>(epilogue.relu6_max()) + 0.5f, -cut);
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, top);
  }
  fused.attr.set_post_ops(ops);
  return fused;
}

}  // namespace dpushard::cpu
