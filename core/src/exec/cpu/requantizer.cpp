#include "requantizer.hpp"

#include <omp.h>

#include <algorithm>

#include "../lowering/epilogue.hpp"
#include "exact_sums.hpp"

namespace dpushard::cpu {

namespace {

using EpilogueKind = lowering::Epilogue::Kind;

struct Params {
  int acc_align, cut;
  std::int64_t half, leaky_half;  // the rounding terms of cut and cut + kLeakyShift
  std::int64_t relu6_max;
  const std::int64_t* bias;
  std::int64_t channels;
};

// DPU_ROUND (half up) of v / 2^cut for cut >= 0 (half = 2^(cut-1), or 0 when cut = 0).
inline std::int8_t round_saturate(std::int64_t v, std::int64_t half, int cut) {
  const std::int64_t r = (v + half) >> cut;
  return static_cast<std::int8_t>(std::clamp<std::int64_t>(r, -128, 127));
}

template <EpilogueKind K, bool Split>
[[gnu::always_inline]] inline void rows_of(const Params& p, const std::int32_t* __restrict lo,
                                           const std::int32_t* __restrict hi, std::int64_t rows,
                                           std::int8_t* __restrict out) {
  // Locals, so the int8 stores (which may alias anything) do not reload them.
  const std::int64_t channels = p.channels, half = p.half, leaky_half = p.leaky_half;
  const std::int64_t relu6_max = p.relu6_max;
  const int acc_align = p.acc_align, cut = p.cut;
  const std::int64_t* __restrict bias = p.bias;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t* __restrict lo_row = lo + r * channels;
    const std::int32_t* __restrict hi_row = Split ? hi + r * channels : nullptr;
    std::int8_t* __restrict out_row = out + r * channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      std::int64_t sum = lo_row[c];
      if constexpr (Split) sum += std::int64_t{hi_row[c]} << kDigitShift;
      std::int64_t v = (sum << acc_align) + bias[c];
      if constexpr (K == EpilogueKind::Relu) v = std::max<std::int64_t>(v, 0);
      if constexpr (K == EpilogueKind::Relu6) v = std::clamp<std::int64_t>(v, 0, relu6_max);
      if constexpr (K == EpilogueKind::Leaky26) {
        // Negative values: v * 26 / 256 and the cut in one rounding (ref's Epilogue).
        const std::int8_t neg = round_saturate(v * kLeakyNumerator, leaky_half, cut + kLeakyShift);
        const std::int8_t pos = round_saturate(v, half, cut);
        out_row[c] = v < 0 ? neg : pos;
      } else {
        out_row[c] = round_saturate(v, half, cut);
      }
    }
  }
}

template <bool Split>
[[gnu::always_inline]] inline void dispatch(EpilogueKind kind, const Params& p,
                                            const std::int32_t* lo, const std::int32_t* hi,
                                            std::int64_t rows, std::int8_t* out) {
  switch (kind) {
    case EpilogueKind::None:
      return rows_of<EpilogueKind::None, Split>(p, lo, hi, rows, out);
    case EpilogueKind::Relu:
      return rows_of<EpilogueKind::Relu, Split>(p, lo, hi, rows, out);
    case EpilogueKind::Relu6:
      return rows_of<EpilogueKind::Relu6, Split>(p, lo, hi, rows, out);
    case EpilogueKind::Leaky26:
      return rows_of<EpilogueKind::Leaky26, Split>(p, lo, hi, rows, out);
    case EpilogueKind::Float:
      return;  // never vectorised (see Requantizer's constructor)
  }
}

// One clone per ISA, chosen at load time by the dynamic linker (GCC ifunc).
[[gnu::target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")]] void requantize_block(
    EpilogueKind kind, const Params& p, const std::int32_t* lo, const std::int32_t* hi,
    std::int64_t rows, std::int8_t* out) {
  if (hi != nullptr)
    dispatch<true>(kind, p, lo, hi, rows, out);
  else
    dispatch<false>(kind, p, lo, hi, rows, out);
}

}  // namespace

Requantizer::Requantizer(const lowering::Chain& chain, int acc_exp, int acc_align, int bias_align,
                         const QTensor* bias, std::int64_t channels)
    : epilogue_(chain, acc_exp),
      acc_align_(acc_align),
      bias_(static_cast<std::size_t>(channels), 0),
      channels_(channels) {
  if (bias != nullptr)
    for (std::size_t c = 0; c < bias_.size(); ++c)
      bias_[c] = std::int64_t{bias->data[c]} * (std::int64_t{1} << bias_align);
  // The fast loop rounds with a right shift of 0..54; scaling up (cut < 0) is ref's.
  vectorised_ =
      epilogue_.kind() != EpilogueKind::Float && epilogue_.cut() >= 0 && epilogue_.cut() <= 54;
}

void Requantizer::run_rows(const std::int32_t* lo, const std::int32_t* hi, std::int64_t first,
                           std::int64_t count, std::int8_t* out) const {
  const std::int64_t offset = first * channels_;
  if (vectorised_) {
    const int cut = epilogue_.cut();
    const Params p{acc_align_,
                   cut,
                   cut > 0 ? std::int64_t{1} << (cut - 1) : 0,
                   std::int64_t{1} << (cut + kLeakyShift - 1),
                   epilogue_.relu6_max(),
                   bias_.data(),
                   channels_};
    requantize_block(epilogue_.kind(), p, lo + offset, hi ? hi + offset : nullptr, count,
                     out + offset);
    return;
  }
  for (std::int64_t i = offset; i < offset + count * channels_; ++i) {
    std::int64_t sum = lo[i];
    if (hi != nullptr) sum += std::int64_t{hi[i]} << kDigitShift;
    const auto c = static_cast<std::size_t>(i % channels_);
    out[i] = epilogue_((sum << acc_align_) + bias_[c]);
  }
}

void Requantizer::run(const std::int32_t* lo, const std::int32_t* hi, std::int64_t rows,
                      std::int8_t* out) const {
  // Split across the threads oneDNN uses, in blocks big enough to be worth a thread.
  const std::int64_t min_rows =
      std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(channels_, 1));
  const int threads =
      static_cast<int>(std::clamp<std::int64_t>(rows / min_rows, 1, omp_get_max_threads()));
  if (threads == 1) return run_rows(lo, hi, 0, rows, out);
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num();
    const std::int64_t n = omp_get_num_threads();
    const std::int64_t first = rows * t / n;
    run_rows(lo, hi, first, rows * (t + 1) / n - first, out);
  }
}

}  // namespace dpushard::cpu
