// conv2d and depthwise-conv2d in DPU integer arithmetic:
//   acc = sum over valid taps of x_q * w_q (padding taps skipped),
//   acc and b_q aligned to the larger of fp_in + fp_w and fp_b, summed,
//   out = epilogue(acc) (nonlinear, DPU_ROUND shift to fp_out, saturate).

#include <algorithm>
#include <string>

#include "../lowering/epilogue.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/window.hpp"
#include "kernels.hpp"

namespace dpushard::ref {

namespace {

struct ConvGeometry {
  std::int64_t batch = 0, in_h = 0, in_w = 0, in_c = 0;
  std::int64_t out_h = 0, out_w = 0, out_c = 0;
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t groups = 1;  // depthwise: one group per channel
};

// XIR order: kernel/stride/dilation are {width, height}; pad is {left, right, top, bottom}.
class ConvKernel final : public Kernel {
 public:
  ConvKernel(ConvGeometry geometry, bool depthwise, SlotId x, SlotId w, std::optional<SlotId> b,
             int acc_align, int bias_align, Epilogue epilogue, SlotId out)
      : g_(geometry),
        depthwise_(depthwise),
        x_(x),
        w_(w),
        b_(b),
        acc_align_(acc_align),
        bias_align_(bias_align),
        epilogue_(epilogue),
        out_(out) {}

  void run(Slots& slots) override {
    const std::int8_t* x = slots[x_].data.data();
    const std::int8_t* w = slots[w_].data.data();
    const std::int8_t* b = b_ ? slots[*b_].data.data() : nullptr;
    std::int8_t* y = slots[out_].data.data();
    const std::int64_t ic_per_group = g_.in_c / g_.groups;
    const std::int64_t oc_per_group = g_.out_c / g_.groups;
    for (std::int64_t n = 0; n < g_.batch; ++n)
      for (std::int64_t oh = 0; oh < g_.out_h; ++oh)
        for (std::int64_t ow = 0; ow < g_.out_w; ++ow) {
          const std::int64_t ih0 = oh * g_.stride_h - g_.pad_top;
          const std::int64_t iw0 = ow * g_.stride_w - g_.pad_left;
          std::int8_t* y_pixel = y + ((n * g_.out_h + oh) * g_.out_w + ow) * g_.out_c;
          for (std::int64_t oc = 0; oc < g_.out_c; ++oc) {
            const std::int64_t group = oc / oc_per_group;
            std::int64_t acc = 0;
            for (std::int64_t kh = 0; kh < g_.kernel_h; ++kh) {
              const std::int64_t ih = ih0 + kh * g_.dilation_h;
              if (ih < 0 || ih >= g_.in_h) continue;  // padding tap
              for (std::int64_t kw = 0; kw < g_.kernel_w; ++kw) {
                const std::int64_t iw = iw0 + kw * g_.dilation_w;
                if (iw < 0 || iw >= g_.in_w) continue;  // padding tap
                const std::int8_t* x_tap =
                    x + ((n * g_.in_h + ih) * g_.in_w + iw) * g_.in_c + group * ic_per_group;
                if (depthwise_) {
                  // weights [1, kh, kw, c]
                  acc += std::int64_t{*x_tap} * w[(kh * g_.kernel_w + kw) * g_.out_c + oc];
                  continue;
                }
                // weights OHWI [oc, kh, kw, ic / groups]
                const std::int8_t* w_tap =
                    w + ((oc * g_.kernel_h + kh) * g_.kernel_w + kw) * ic_per_group;
                for (std::int64_t ic = 0; ic < ic_per_group; ++ic)
                  acc += std::int64_t{x_tap[ic]} * w_tap[ic];
              }
            }
            acc *= std::int64_t{1} << acc_align_;
            if (b != nullptr) acc += std::int64_t{b[oc]} * (std::int64_t{1} << bias_align_);
            y_pixel[oc] = epilogue_(acc);
          }
        }
  }

 private:
  ConvGeometry g_;
  bool depthwise_;
  SlotId x_, w_;
  std::optional<SlotId> b_;
  int acc_align_, bias_align_;
  Epilogue epilogue_;
  SlotId out_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv(const Chain& chain, const Lowering& lowering) {
  const Op& op = chain.producer;
  const bool depthwise = op.type == "depthwise-conv2d";
  const SlotId x = lowering.arg_slot(op, "input", 0);
  const SlotId w = lowering.arg_slot(op, "weights", 0);
  const std::optional<SlotId> b = lowering.optional_arg_slot(op, "bias", 0);
  const QTensor& xt = lowering.slot(x);
  const QTensor& wt = lowering.slot(w);
  const QTensor& yt = lowering.slot(chain.out);
  if (xt.shape.size() != 4) fail(op, "input must be NHWC, got " + shape_text(xt.shape));
  if (wt.shape.size() != 4) fail(op, "weights must be OHWI, got " + shape_text(wt.shape));
  if (yt.shape.size() != 4) fail(op, "output must be NHWC, got " + shape_text(yt.shape));

  ConvGeometry g;
  g.batch = xt.shape[0];
  g.in_h = xt.shape[1];
  g.in_w = xt.shape[2];
  g.in_c = xt.shape[3];
  g.out_h = yt.shape[1];
  g.out_w = yt.shape[2];
  g.out_c = yt.shape[3];
  g.kernel_h = wt.shape[1];
  g.kernel_w = wt.shape[2];
  const Window win = window_of(op);
  if (win.kernel_w != g.kernel_w || win.kernel_h != g.kernel_h)
    fail(op, "attribute 'kernel' does not match the weights " + shape_text(wt.shape));
  g.stride_w = win.stride_w;
  g.stride_h = win.stride_h;
  g.dilation_w = win.dilation_w;
  g.dilation_h = win.dilation_h;
  g.pad_left = win.pad_left;
  g.pad_top = win.pad_top;

  if (yt.shape[0] != g.batch) fail(op, "output batch differs from the input's");
  if (depthwise) {
    g.groups = g.in_c;
    if (wt.shape[0] != 1 || wt.shape[3] != g.in_c || g.out_c != g.in_c)
      fail(op, "depthwise weights must be [1, kh, kw, " + std::to_string(g.in_c) + "], got " +
                   shape_text(wt.shape) + " (channel multiplier 1 only)");
  } else {
    g.groups = int_attr(op.attrs, "group", 1);
    if (g.groups < 1 || g.in_c % g.groups != 0 || g.out_c % g.groups != 0)
      fail(op, "group " + std::to_string(g.groups) + " does not divide the channels");
    if (wt.shape[0] != g.out_c || wt.shape[3] * g.groups != g.in_c)
      fail(op, "weights " + shape_text(wt.shape) + " do not fit input " + shape_text(xt.shape) +
                   " and output " + shape_text(yt.shape));
  }
  // The last window must start inside the padded input (CEIL mode may let it run past).
  if ((g.out_h - 1) * g.stride_h - g.pad_top > g.in_h - 1 + win.pad_bottom ||
      (g.out_w - 1) * g.stride_w - g.pad_left > g.in_w - 1 + win.pad_right || g.out_h < 1 ||
      g.out_w < 1)
    fail(op, "output " + shape_text(yt.shape) + " does not fit input " + shape_text(xt.shape));

  const int product_fp = xt.fix_point + wt.fix_point;
  int acc_exp = product_fp;
  if (b) {
    const QTensor& bt = lowering.slot(*b);
    if (element_count(bt.shape) != g.out_c)
      fail(op, "bias " + shape_text(bt.shape) + " does not have " + std::to_string(g.out_c) +
                   " values");
    acc_exp = std::max(product_fp, bt.fix_point);
  }
  const int acc_align = acc_exp - product_fp;
  const int bias_align = b ? acc_exp - lowering.slot(*b).fix_point : 0;
  if (acc_align > 24 || bias_align > 24)
    fail(op, "bias shift " + std::to_string(b ? product_fp - lowering.slot(*b).fix_point : 0) +
                 " is out of range");
  return std::make_unique<ConvKernel>(g, depthwise, x, w, b, acc_align, bias_align,
                                      Epilogue(chain, acc_exp), chain.out);
}

}  // namespace dpushard::ref
