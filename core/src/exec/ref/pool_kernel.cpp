// maxpool2d and avgpool2d on int8 NHWC tensors (see docs/numerics.md):
//   maxpool: the largest q over the window's valid taps (padding taps ignored), then the
//            epilogue from fp_in (a plain copy when fp_out = fp_in);
//   avgpool: sum of the valid taps (padding counts as zero) times the DPU factor N / 2^M,
//            then the epilogue from fp_in + M: one DPU_ROUND of sum * N / 2^(M + fp_in - fp_out).
//   avgpool2d -> mul(c) -> fix, the quantizer's correction: the float graph computes
//            mean * c. When c = count * N / 2^M (1.0 for power-of-two kernels) that is the
//            DPU factor, computed exactly as above; any other c is evaluated in double as
//            sum * c / count and quantized with the fix's round mode.

#include <algorithm>
#include <limits>
#include <string>

#include "../lowering/epilogue.hpp"
#include "../lowering/pool_geometry.hpp"
#include "dpushard/graph/attr.hpp"
#include "dpushard/graph/window.hpp"
#include "kernels.hpp"

namespace dpushard::ref {

namespace {

using lowering::pool_geometry;
using lowering::PoolGeometry;

// Calls reduce(tap value) over the valid taps of every window, then store(out index).
template <typename Start, typename Reduce, typename Store>
void for_each_window(const PoolGeometry& g, const std::int8_t* x, Start start, Reduce reduce,
                     Store store) {
  for (std::int64_t n = 0; n < g.batch; ++n)
    for (std::int64_t oh = 0; oh < g.out_h; ++oh)
      for (std::int64_t ow = 0; ow < g.out_w; ++ow)
        for (std::int64_t c = 0; c < g.channels; ++c) {
          start();
          for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
            const std::int64_t ih = oh * g.stride_h - g.pad_top + kh;
            if (ih < 0 || ih >= g.in_h) continue;
            for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
              const std::int64_t iw = ow * g.stride_w - g.pad_left + kw;
              if (iw < 0 || iw >= g.in_w) continue;
              reduce(x[((n * g.in_h + ih) * g.in_w + iw) * g.channels + c]);
            }
          }
          store(((n * g.out_h + oh) * g.out_w + ow) * g.channels + c);
        }
}

class MaxPoolKernel final : public Kernel {
 public:
  MaxPoolKernel(PoolGeometry g, SlotId x, Epilogue epilogue, SlotId out)
      : g_(g), x_(x), epilogue_(epilogue), out_(out) {}

  void run(Slots& slots) override {
    std::int8_t* y = slots[out_].data.data();
    std::int64_t best = 0;
    bool any = false;
    for_each_window(
        g_, slots[x_].data.data(),
        [&] {
          best = std::numeric_limits<std::int64_t>::min();
          any = false;
        },
        [&](std::int8_t v) {
          best = std::max<std::int64_t>(best, v);
          any = true;
        },
        // A window made only of padding (not produced by valid shapes) yields 0.
        [&](std::int64_t i) { y[i] = epilogue_(any ? best : 0); });
  }

 private:
  PoolGeometry g_;
  SlotId x_;
  Epilogue epilogue_;
  SlotId out_;
};

class AvgPoolKernel final : public Kernel {
 public:
  // Exact: out = epilogue(sum * multiplier). Float (multiplier = 0): epilogue.from_value(
  // sum * scale * 2^-fp_in).
  AvgPoolKernel(PoolGeometry g, SlotId x, std::int64_t multiplier, double scale, int fp_in,
                Epilogue epilogue, SlotId out)
      : g_(g),
        x_(x),
        multiplier_(multiplier),
        scale_(scale),
        fp_in_(fp_in),
        epilogue_(epilogue),
        out_(out) {}

  void run(Slots& slots) override {
    std::int8_t* y = slots[out_].data.data();
    std::int64_t sum = 0;
    for_each_window(
        g_, slots[x_].data.data(), [&] { sum = 0; }, [&](std::int8_t v) { sum += v; },
        [&](std::int64_t i) {
          y[i] = multiplier_ != 0
                     ? epilogue_(sum * multiplier_)
                     : epilogue_.from_value(std::ldexp(static_cast<double>(sum), -fp_in_) * scale_);
        });
  }

 private:
  PoolGeometry g_;
  SlotId x_;
  std::int64_t multiplier_;
  double scale_;
  int fp_in_;
  Epilogue epilogue_;
  SlotId out_;
};

}  // namespace

std::unique_ptr<Kernel> make_maxpool(const Chain& chain, const Lowering& lowering) {
  const Op& pool = chain.producer;
  const SlotId x = lowering.arg_slot(pool, "input", 0);
  const QTensor& xt = lowering.slot(x);
  const PoolGeometry g = pool_geometry(pool, xt, lowering.slot(chain.out));
  return std::make_unique<MaxPoolKernel>(g, x, Epilogue(chain, xt.fix_point), chain.out);
}

std::unique_ptr<Kernel> make_avgpool(const Chain& chain, const Lowering& lowering, const Op& pool,
                                     const float* scale) {
  const SlotId x = lowering.arg_slot(pool, "input", 0);
  const QTensor& xt = lowering.slot(x);
  const PoolGeometry g = pool_geometry(pool, xt, lowering.slot(chain.out));
  if (g.padded && !bool_attr(pool.attrs, "count_include_pad", true))
    fail(pool, "count_include_pad = false with padding has no DPU form");
  const std::int64_t count = g.kernel_h * g.kernel_w;
  const AvgPoolFactor factor = avgpool_factor(g.kernel_h, g.kernel_w);
  const double correction = static_cast<double>(count) *
                            std::ldexp(static_cast<double>(factor.multiplier), -factor.shift);
  if (scale == nullptr || double{*scale} == correction)
    return std::make_unique<AvgPoolKernel>(g, x, factor.multiplier, 0.0, xt.fix_point,
                                           Epilogue(chain, xt.fix_point + factor.shift), chain.out);
  return std::make_unique<AvgPoolKernel>(g, x, 0, double{*scale} / static_cast<double>(count),
                                         xt.fix_point, Epilogue(chain, xt.fix_point), chain.out);
}

}  // namespace dpushard::ref
