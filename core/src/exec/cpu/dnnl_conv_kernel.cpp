// conv2d / depthwise-conv2d on oneDNN: NHWC s8 activations x s8 weights (reordered once
// into oneDNN's blocked layout) -> s32 NHWC sums, then the ref requantisation. Padding taps
// contribute zero, as the ref kernel's skipped taps do.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "dnnl_context.hpp"
#include "dnnl_kernels.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/window.hpp"
#include "exact_sums.hpp"
#include "fused_epilogue.hpp"

namespace dpushard::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Type = memory::data_type;

}  // namespace

std::unique_ptr<lowering::Kernel> make_dnnl_conv(const lowering::Chain& chain,
                                                 const lowering::Lowering& lowering) {
  const Op& op = chain.producer;
  if (!is_constant(lowering, op, "weights", 0)) return nullptr;
  const bool depthwise = op.type == "depthwise-conv2d";
  const lowering::SlotId x = lowering.arg_slot(op, "input", 0);
  const lowering::SlotId w = lowering.arg_slot(op, "weights", 0);
  const std::optional<lowering::SlotId> b = lowering.optional_arg_slot(op, "bias", 0);
  const QTensor& xt = lowering.slot(x);
  const QTensor& wt = lowering.slot(w);
  const QTensor& yt = lowering.slot(chain.out);

  const std::int64_t batch = xt.shape[0], in_c = xt.shape[3];
  const std::int64_t out_c = yt.shape[3], kh = wt.shape[1], kw = wt.shape[2];
  const std::int64_t groups = depthwise ? in_c : int_attr(op.attrs, "group", 1);
  const std::int64_t ic_g = in_c / groups, oc_g = out_c / groups;
  if (!exact_int8_sums(kh * kw * ic_g)) return nullptr;
  const Window win = window_of(op);
  const std::int64_t stride_h = win.stride_h, stride_w = win.stride_w;
  const std::int64_t dilation_h = win.dilation_h, dilation_w = win.dilation_w;
  // oneDNN's right/bottom padding is whatever makes its output size formula give ours.
  const auto far_pad = [](std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t s,
                          std::int64_t d, std::int64_t near) {
    return (out - 1) * s + (k - 1) * d + 1 - in - near;
  };
  const std::int64_t pad_bottom =
      far_pad(xt.shape[1], yt.shape[1], kh, stride_h, dilation_h, win.pad_top);
  const std::int64_t pad_right =
      far_pad(xt.shape[2], yt.shape[2], kw, stride_w, dilation_w, win.pad_left);

  const memory::desc src_md({batch, in_c, xt.shape[1], xt.shape[2]}, Type::s8, Tag::nhwc);
  const memory::desc dst_md({batch, out_c, yt.shape[1], yt.shape[2]}, Type::s32, Tag::nhwc);
  // The graph's weights: OHWI [G*OCg, kh, kw, ICg], or depthwise [1, kh, kw, C].
  const memory::dims w_dims = {groups, oc_g, ic_g, kh, kw};
  const memory::dims w_strides =
      depthwise ? memory::dims{1, 1, 1, kw * in_c, in_c}
                : memory::dims{oc_g * kh * kw * ic_g, kh * kw * ic_g, 1, kw * ic_g, ic_g};
  const memory::desc w_plain(w_dims, Type::s8, w_strides);
  const memory::desc w_any(w_dims, Type::s8, Tag::any);

  // oneDNN pads with zero and dilation 0 means dense.
  const auto conv_pd = [&](const memory::desc& dst, const memory::desc* bias_md,
                           const dnnl::primitive_attr& attr)
      -> std::optional<dnnl::convolution_forward::primitive_desc> {
    try {
      const auto desc =
          bias_md
              ? dnnl::convolution_forward::desc(
                    dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                    w_any, *bias_md, dst, {stride_h, stride_w}, {dilation_h - 1, dilation_w - 1},
                    {win.pad_top, win.pad_left}, {pad_bottom, pad_right})
              : dnnl::convolution_forward::desc(
                    dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                    w_any, dst, {stride_h, stride_w}, {dilation_h - 1, dilation_w - 1},
                    {win.pad_top, win.pad_left}, {pad_bottom, pad_right});
      return dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
    } catch (const dnnl::error&) {
      return std::nullopt;  // a geometry oneDNN does not implement
    }
  };
  // Output channel of each plain weight: OHWI rows, or the last axis for depthwise.
  const auto per_channel = static_cast<std::size_t>(kh * kw * ic_g);
  const auto channel_of = [=](std::size_t i) -> std::int64_t {
    return depthwise ? static_cast<std::int64_t>(i % static_cast<std::size_t>(in_c))
                     : static_cast<std::int64_t>(i / per_channel);
  };
  const Alignment a = align(lowering, xt.fix_point + wt.fix_point, b);
  const QTensor* bias = b ? &lowering.slot(*b) : nullptr;

  // The whole chain in oneDNN when that is exact (fused_epilogue.hpp).
  if (weight_sums_exact(wt.data, out_c, channel_of))
    if (auto fused = fused_epilogue(chain, a.acc_exp, a.acc_align, a.bias_align, bias, out_c)) {
      const memory::desc y_md({batch, out_c, yt.shape[1], yt.shape[2]}, Type::s8, Tag::nhwc);
      const memory::desc bias_md({out_c}, Type::f32, Tag::a);
      if (const auto pd = conv_pd(y_md, &bias_md, fused->attr))
        return std::make_unique<FusedDnnlKernel>(
            dnnl::convolution_forward(*pd), pd->src_desc(), pd->dst_desc(), pd->scratchpad_desc(),
            pd->bias_desc(), reorder_weights(w_plain, pd->weights_desc(), wt.data),
            std::move(fused->bias), x, chain.out);
    }

  // Otherwise exact s32 sums, then dpushard's requantizer.
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto pd = conv_pd(dst_md, nullptr, attr);
  if (!pd) return nullptr;  // the ref kernel runs it
  auto weights = exact_weights(w_plain, pd->weights_desc(), wt.data, out_c, channel_of);
  if (!weights) return nullptr;  // sums beyond float precision even split: ref runs it
  const std::int64_t pixels = batch * yt.shape[1] * yt.shape[2];
  return std::make_unique<DnnlKernel>(
      dnnl::convolution_forward(*pd), pd->src_desc(), pd->weights_desc(), pd->dst_desc(),
      pd->scratchpad_desc(), std::move(*weights), x, std::nullopt, chain.out, pixels, out_c,
      Requantizer(chain, a.acc_exp, a.acc_align, a.bias_align, bias, out_c));
}

}  // namespace dpushard::cpu
