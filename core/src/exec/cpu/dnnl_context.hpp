#pragma once
// What every oneDNN kernel shares: the CPU engine and stream, the constant-weights check,
// the accumulator alignment of a chain, and the kernel that runs a primitive per weight
// digit and requantizes its s32 sums.

#include <cstdint>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "../lowering/program.hpp"
#include "requantizer.hpp"

namespace dpushard::cpu {

dnnl::engine& cpu_engine();
dnnl::stream& cpu_stream();

// True when the value behind producer `index` of `arg` of `op` is a quantized constant
// (const -> fix).
bool is_constant(const lowering::Lowering& lowering, const Op& op, std::string_view arg,
                 std::size_t index);

// acc_exp and the alignments of a conv/matmul chain: product fix_point vs bias fix_point.
struct Alignment {
  int acc_exp = 0, acc_align = 0, bias_align = 0;
};
Alignment align(const lowering::Lowering& lowering, int product_fp,
                std::optional<lowering::SlotId> bias);

// Reorders plain int8 weights (`plain` describes `values`) into `layout` once, at load.
dnnl::memory reorder_weights(const dnnl::memory::desc& plain, const dnnl::memory::desc& layout,
                             const std::vector<std::int8_t>& values);

// The constant weights in `layout`, as one memory when their sums are exact in oneDNN
// (exact_sums.hpp), as {lo, hi} digits when only the digits' are, or nullopt.
std::optional<std::vector<dnnl::memory>> exact_weights(
    const dnnl::memory::desc& plain, const dnnl::memory::desc& layout,
    const std::vector<std::int8_t>& values, std::int64_t channels,
    const std::function<std::int64_t(std::size_t)>& channel_of);

// A conv or matmul primitive with s8 src and weights and an s32 dst, run once per weight
// digit (one, or lo and hi of split weights), then the requantizer. All memory is
// allocated here; run() only sets the activations' data handles.
class DnnlKernel final : public lowering::Kernel {
 public:
  // `weights`: reordered constant digits, or empty when the weights are slot `weight_slot`.
  DnnlKernel(dnnl::primitive primitive, const dnnl::memory::desc& src_md,
             const dnnl::memory::desc& weights_md, const dnnl::memory::desc& dst_md,
             const dnnl::memory::desc& scratch_md, std::vector<dnnl::memory> weights,
             lowering::SlotId src_slot, std::optional<lowering::SlotId> weight_slot,
             lowering::SlotId out_slot, std::int64_t rows, std::int64_t channels,
             Requantizer requantizer);
  void run(lowering::Slots& slots) override;

 private:
  dnnl::primitive primitive_;
  dnnl::memory src_, scratch_;
  std::vector<dnnl::memory> weights_;
  std::vector<std::vector<std::int32_t>> sums_;  // one buffer per digit
  std::vector<dnnl::memory> dst_;
  lowering::SlotId src_slot_;
  std::optional<lowering::SlotId> weight_slot_;
  lowering::SlotId out_slot_;
  std::int64_t rows_;
  Requantizer requantizer_;
};

// A conv or matmul primitive with the chain's requantisation fused (fused_epilogue.hpp):
// s8 src, constant s8 weights, f32 bias, s8 dst written straight into the output slot.
class FusedDnnlKernel final : public lowering::Kernel {
 public:
  FusedDnnlKernel(dnnl::primitive primitive, const dnnl::memory::desc& src_md,
                  const dnnl::memory::desc& dst_md, const dnnl::memory::desc& scratch_md,
                  const dnnl::memory::desc& bias_md, dnnl::memory weights, std::vector<float> bias,
                  lowering::SlotId src_slot, lowering::SlotId out_slot);
  void run(lowering::Slots& slots) override;

 private:
  dnnl::primitive primitive_;
  dnnl::memory src_, dst_, scratch_, weights_;
  std::vector<float> bias_values_;
  dnnl::memory bias_;
  lowering::SlotId src_slot_, out_slot_;
};

}  // namespace dpushard::cpu
