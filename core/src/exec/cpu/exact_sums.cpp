#include "exact_sums.hpp"

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

namespace dpushard::cpu {

bool exact_int8_sums(std::int64_t k) {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  const bool vnni = isa == dnnl::cpu_isa::avx2_vnni || isa == dnnl::cpu_isa::avx512_core_vnni ||
                    isa == dnnl::cpu_isa::avx512_core_bf16 ||
                    isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::all;
  // Inside the kernel s8 inputs are shifted to u8: |sum| <= k * 255 * 128 must fit s32.
  return vnni && k > 0 && k <= (std::int64_t{1} << 16);
}

bool weight_sums_exact(std::span<const std::int8_t> weights, std::int64_t channels,
                       const std::function<std::int64_t(std::size_t)>& channel_of) {
  std::vector<std::int64_t> sums(static_cast<std::size_t>(channels), 0);
  for (std::size_t i = 0; i < weights.size(); ++i)
    sums[static_cast<std::size_t>(channel_of(i))] += std::abs(int{weights[i]});
  for (std::int64_t sum : sums)
    if (sum * 128 > kExactF32Sum) return false;
  return true;
}

Digits split_digits(std::span<const std::int8_t> weights) {
  Digits d;
  d.lo.resize(weights.size());
  d.hi.resize(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const int w = weights[i];
    const int lo = ((w + 8) & 15) - 8;
    d.lo[i] = static_cast<std::int8_t>(lo);
    d.hi[i] = static_cast<std::int8_t>((w - lo) / 16);
  }
  return d;
}

}  // namespace dpushard::cpu
