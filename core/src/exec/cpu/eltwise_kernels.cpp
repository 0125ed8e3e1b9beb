// add and maxpool2d for the cpu backend: the ref arithmetic with channels innermost, so
// the loops vectorise. Broadcasting adds and sums that could overflow int32 stay with the
// ref kernels.
//   add:     sum_j q_j << (acc_exp - fp_j) in int32, then the epilogue from acc_exp: in one
//            pass for two inputs and an integer nonlinear, else through the requantizer;
//   maxpool: the largest q over the valid taps (padding ignored; no valid tap gives 0),
//            then the epilogue from fp_in (a plain copy when it is the identity).

#include <omp.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "../lowering/epilogue.hpp"
#include "../lowering/pool_geometry.hpp"
#include "dnnl_kernels.hpp"
#include "dpushard/graph/attr.hpp"
#include "requantizer.hpp"

namespace dpushard::cpu {

namespace {

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void add_shifted(
    const std::int8_t* x, int shift, std::int64_t count, bool first, std::int32_t* sums) {
  if (first)
    for (std::int64_t i = 0; i < count; ++i) sums[i] = std::int32_t{x[i]} * (1 << shift);
  else
    for (std::int64_t i = 0; i < count; ++i) sums[i] += std::int32_t{x[i]} * (1 << shift);
}

// Two same-shape inputs in one int32 pass: (a << sa) + (b << sb), the integer nonlinear,
// DPU_ROUND by `cut` (half = 2^(cut-1), 0 for cut 0), saturation. The factory checks that
// nothing here leaves int32.
struct Add2 {
  lowering::Epilogue::Kind kind;
  int shift_a, shift_b, cut;
  std::int32_t half, leaky_half, relu6_max;
};

template <lowering::Epilogue::Kind K>
[[gnu::always_inline]] inline void add2_loop(const Add2& p, const std::int8_t* __restrict a,
                                             const std::int8_t* __restrict b, std::int64_t count,
                                             std::int8_t* __restrict out) {
  using Kind = lowering::Epilogue::Kind;
  const int sa = p.shift_a, sb = p.shift_b, cut = p.cut;
  const std::int32_t half = p.half, leaky_half = p.leaky_half, relu6_max = p.relu6_max;
  for (std::int64_t i = 0; i < count; ++i) {
    std::int32_t v = (std::int32_t{a[i]} << sa) + (std::int32_t{b[i]} << sb);
    if constexpr (K == Kind::Relu) v = std::max(v, 0);
    if constexpr (K == Kind::Relu6) v = std::clamp(v, 0, relu6_max);
    std::int32_t r = (v + half) >> cut;
    if constexpr (K == Kind::Leaky26)
      if (v < 0)
        r = (v * static_cast<std::int32_t>(kLeakyNumerator) + leaky_half) >> (cut + kLeakyShift);
    out[i] = static_cast<std::int8_t>(std::clamp(r, -128, 127));
  }
}

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void add2(
    const Add2& p, const std::int8_t* a, const std::int8_t* b, std::int64_t count,
    std::int8_t* out) {
  using Kind = lowering::Epilogue::Kind;
  switch (p.kind) {
    case Kind::None:
      return add2_loop<Kind::None>(p, a, b, count, out);
    case Kind::Relu:
      return add2_loop<Kind::Relu>(p, a, b, count, out);
    case Kind::Relu6:
      return add2_loop<Kind::Relu6>(p, a, b, count, out);
    case Kind::Leaky26:
      return add2_loop<Kind::Leaky26>(p, a, b, count, out);
    case Kind::Float:
      return;  // never chosen (make_fast_add)
  }
}

class Add2Kernel final : public lowering::Kernel {
 public:
  Add2Kernel(Add2 params, lowering::SlotId a, lowering::SlotId b, std::int64_t count,
             lowering::SlotId out)
      : p_(params), a_(a), b_(b), count_(count), out_(out) {}

  void run(lowering::Slots& slots) override {
    const std::int8_t* a = slots[a_].data.data();
    const std::int8_t* b = slots[b_].data.data();
    std::int8_t* y = slots[out_].data.data();
    const int threads =
        static_cast<int>(std::clamp<std::int64_t>(count_ / 16384, 1, omp_get_max_threads()));
#pragma omp parallel num_threads(threads)
    {
      const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
      // 64-element aligned chunks.
      const std::int64_t first = (count_ * t / n) & ~std::int64_t{63};
      const std::int64_t last = t + 1 == n ? count_ : (count_ * (t + 1) / n) & ~std::int64_t{63};
      add2(p_, a + first, b + first, last - first, y + first);
    }
  }

 private:
  Add2 p_;
  lowering::SlotId a_, b_;
  std::int64_t count_;
  lowering::SlotId out_;
};

// The one-pass form when the chain allows it: two inputs, an integer nonlinear, a shift of
// 0..24 and every intermediate (leaky's v * 26 included) inside int32.
std::optional<Add2> add2_params(const lowering::Chain& chain, int acc_exp,
                                const std::vector<int>& aligns) {
  using Kind = lowering::Epilogue::Kind;
  if (aligns.size() != 2) return std::nullopt;
  const lowering::Epilogue epilogue(chain, acc_exp);
  const int cut = epilogue.cut();
  if (epilogue.kind() == Kind::Float || cut < 0 || cut > 24) return std::nullopt;
  const std::int64_t bound = (std::int64_t{128} << aligns[0]) + (std::int64_t{128} << aligns[1]);
  if (bound * kLeakyNumerator + (std::int64_t{1} << (cut + kLeakyShift)) >= (std::int64_t{1} << 31))
    return std::nullopt;
  if (epilogue.relu6_max() >= (std::int64_t{1} << 30)) return std::nullopt;
  return Add2{epilogue.kind(),
              aligns[0],
              aligns[1],
              cut,
              cut > 0 ? std::int32_t{1} << (cut - 1) : 0,
              std::int32_t{1} << (cut + kLeakyShift - 1),
              static_cast<std::int32_t>(epilogue.relu6_max())};
}

class AddKernel final : public lowering::Kernel {
 public:
  AddKernel(std::vector<lowering::SlotId> inputs, std::vector<int> aligns, std::int64_t rows,
            std::int64_t channels, Requantizer requantizer, lowering::SlotId out)
      : inputs_(std::move(inputs)),
        aligns_(std::move(aligns)),
        sums_(static_cast<std::size_t>(rows * channels)),
        rows_(rows),
        requantizer_(std::move(requantizer)),
        out_(out) {}

  void run(lowering::Slots& slots) override {
    const auto count = static_cast<std::int64_t>(sums_.size());
    for (std::size_t j = 0; j < inputs_.size(); ++j)
      add_shifted(slots[inputs_[j]].data.data(), aligns_[j], count, j == 0, sums_.data());
    requantizer_.run(sums_.data(), nullptr, rows_, slots[out_].data.data());
  }

 private:
  std::vector<lowering::SlotId> inputs_;
  std::vector<int> aligns_;
  std::vector<std::int32_t> sums_;
  std::int64_t rows_;
  Requantizer requantizer_;
  lowering::SlotId out_;
};

using lowering::PoolGeometry;

[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void max_rows(
    const PoolGeometry& g, const std::int8_t* x, std::int64_t first, std::int64_t count,
    std::int32_t* out) {
  for (std::int64_t p = first; p < first + count; ++p) {
    const std::int64_t ow = p % g.out_w, oh = (p / g.out_w) % g.out_h, n = p / (g.out_w * g.out_h);
    std::int32_t* row = out + p * g.channels;
    std::fill(row, row + g.channels, -128);
    bool any = false;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const std::int64_t ih = oh * g.stride_h - g.pad_top + kh;
      if (ih < 0 || ih >= g.in_h) continue;
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const std::int64_t iw = ow * g.stride_w - g.pad_left + kw;
        if (iw < 0 || iw >= g.in_w) continue;
        const std::int8_t* tap = x + ((n * g.in_h + ih) * g.in_w + iw) * g.channels;
        for (std::int64_t c = 0; c < g.channels; ++c)
          row[c] = std::max(row[c], std::int32_t{tap[c]});
        any = true;
      }
    }
    if (!any) std::fill(row, row + g.channels, 0);
  }
}

class MaxPoolKernel final : public lowering::Kernel {
 public:
  MaxPoolKernel(PoolGeometry g, lowering::SlotId x, Requantizer requantizer, lowering::SlotId out)
      : g_(g),
        x_(x),
        maxima_(static_cast<std::size_t>(g.batch * g.out_h * g.out_w * g.channels)),
        requantizer_(std::move(requantizer)),
        out_(out) {}

  void run(lowering::Slots& slots) override {
    const std::int64_t pixels = g_.batch * g_.out_h * g_.out_w;
    const std::int8_t* x = slots[x_].data.data();
#pragma omp parallel
    {
      const std::int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
      const std::int64_t first = pixels * t / n;
      max_rows(g_, x, first, pixels * (t + 1) / n - first, maxima_.data());
    }
    requantizer_.run(maxima_.data(), nullptr, pixels, slots[out_].data.data());
  }

 private:
  PoolGeometry g_;
  lowering::SlotId x_;
  std::vector<std::int32_t> maxima_;
  Requantizer requantizer_;
  lowering::SlotId out_;
};

}  // namespace

std::unique_ptr<lowering::Kernel> make_fast_add(const lowering::Chain& chain,
                                                const lowering::Lowering& lowering) {
  const Op& op = chain.producer;
  const QTensor& yt = lowering.slot(chain.out);
  const auto& producers = op.producers("input");
  std::vector<lowering::SlotId> inputs;
  int acc_exp = lowering.slot(lowering.arg_slot(op, "input", 0)).fix_point;
  for (std::size_t i = 0; i < producers.size(); ++i) {
    inputs.push_back(lowering.arg_slot(op, "input", i));
    const QTensor& t = lowering.slot(inputs.back());
    if (t.shape != yt.shape) return nullptr;  // broadcasting: the ref kernel
    acc_exp = std::max(acc_exp, t.fix_point);
  }
  std::vector<int> aligns;
  for (lowering::SlotId id : inputs) aligns.push_back(acc_exp - lowering.slot(id).fix_point);
  // |sum| <= inputs * 128 << max align must stay inside int32.
  int max_align = 0;
  for (int align : aligns) max_align = std::max(max_align, align);
  if (max_align > 20 ||
      static_cast<std::int64_t>(inputs.size()) * (std::int64_t{128} << max_align) >=
          (std::int64_t{1} << 31))
    return nullptr;
  if (const auto p = add2_params(chain, acc_exp, aligns))
    return std::make_unique<Add2Kernel>(*p, inputs[0], inputs[1], element_count(yt.shape),
                                        chain.out);
  const std::int64_t channels = yt.shape.empty() ? 1 : yt.shape.back();
  const std::int64_t rows = element_count(yt.shape) / std::max<std::int64_t>(channels, 1);
  return std::make_unique<AddKernel>(std::move(inputs), std::move(aligns), rows, channels,
                                     Requantizer(chain, acc_exp, 0, 0, nullptr, channels),
                                     chain.out);
}

std::unique_ptr<lowering::Kernel> make_fast_maxpool(const lowering::Chain& chain,
                                                    const lowering::Lowering& lowering) {
  const Op& pool = chain.producer;
  const lowering::SlotId x = lowering.arg_slot(pool, "input", 0);
  const QTensor& xt = lowering.slot(x);
  const lowering::PoolGeometry g = lowering::pool_geometry(pool, xt, lowering.slot(chain.out));
  return std::make_unique<MaxPoolKernel>(
      g, x, Requantizer(chain, xt.fix_point, 0, 0, nullptr, g.channels), chain.out);
}

}  // namespace dpushard::cpu
