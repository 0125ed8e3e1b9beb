#pragma once
// What every oneDNN kernel shares: the CPU engine and stream, the exactness checks, and the
// requantisation of an int32 accumulator tile.

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "../ref/epilogue.hpp"
#include "../ref/plan.hpp"

namespace dpushard::cpu {

dnnl::engine& cpu_engine();
dnnl::stream& cpu_stream();

// oneDNN's int8 sums are exact only with VNNI (without it, s8 weights are halved to avoid
// int16 saturation) and while K products of int8 cannot overflow int32.
bool exact_int8_sums(std::int64_t k);

// True when the value behind `arg` 0 of `op` is a quantized constant (const -> fix).
bool is_constant(const ref::Lowering& lowering, const Op& op, std::string_view arg,
                 std::size_t index);

// rows x channels accumulators -> int8: acc << acc_align + bias[c] << bias_align, then the
// chain's epilogue, exactly as the ref kernels do.
class Requantizer {
 public:
  Requantizer(const ref::Chain& chain, int acc_exp, int acc_align, int bias_align,
              std::optional<ref::SlotId> bias);
  void run(const ref::Slots& slots, const std::int32_t* acc, std::int64_t rows,
           std::int64_t channels, std::int8_t* out) const;

 private:
  ref::Epilogue epilogue_;
  int acc_align_, bias_align_;
  std::optional<ref::SlotId> bias_;
};

// acc_exp and the alignments of a conv/matmul chain: product fix_point vs bias fix_point.
struct Alignment {
  int acc_exp = 0, acc_align = 0, bias_align = 0;
};
Alignment align(const ref::Lowering& lowering, int product_fp, std::optional<ref::SlotId> bias);

}  // namespace dpushard::cpu
