#include "dnnl_context.hpp"

#include <algorithm>

namespace dpushard::cpu {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  static dnnl::stream stream(cpu_engine());
  return stream;
}

bool exact_int8_sums(std::int64_t k) {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  const bool vnni = isa == dnnl::cpu_isa::avx2_vnni || isa == dnnl::cpu_isa::avx512_core_vnni ||
                    isa == dnnl::cpu_isa::avx512_core_bf16 ||
                    isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::all;
  // |sum| <= k * 128 * 128 must stay below 2^31.
  return vnni && k > 0 && k <= (std::int64_t{1} << 17) - 1;
}

bool is_constant(const ref::Lowering& lowering, const Op& op, std::string_view arg,
                 std::size_t index) {
  const auto& producers = op.producers(arg);
  if (index >= producers.size()) return false;
  const Graph& graph = lowering.graph();
  const Op& fix = graph.op(producers[index]);
  if (fix.type != "fix") return false;
  const auto& sources = fix.producers("input");
  return sources.size() == 1 && graph.op(sources.front()).type == "const";
}

Requantizer::Requantizer(const ref::Chain& chain, int acc_exp, int acc_align, int bias_align,
                         std::optional<ref::SlotId> bias)
    : epilogue_(chain, acc_exp), acc_align_(acc_align), bias_align_(bias_align), bias_(bias) {}

void Requantizer::run(const ref::Slots& slots, const std::int32_t* acc, std::int64_t rows,
                      std::int64_t channels, std::int8_t* out) const {
  const std::int8_t* bias = bias_ ? slots[*bias_].data.data() : nullptr;
  const std::int64_t scale = std::int64_t{1} << acc_align_;
  const std::int64_t bias_scale = std::int64_t{1} << bias_align_;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int32_t* acc_row = acc + r * channels;
    std::int8_t* out_row = out + r * channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      std::int64_t value = std::int64_t{acc_row[c]} * scale;
      if (bias != nullptr) value += std::int64_t{bias[c]} * bias_scale;
      out_row[c] = epilogue_(value);
    }
  }
}

Alignment align(const ref::Lowering& lowering, int product_fp, std::optional<ref::SlotId> bias) {
  Alignment a;
  a.acc_exp = product_fp;
  if (bias) a.acc_exp = std::max(product_fp, lowering.slot(*bias).fix_point);
  a.acc_align = a.acc_exp - product_fp;
  a.bias_align = bias ? a.acc_exp - lowering.slot(*bias).fix_point : 0;
  return a;
}

}  // namespace dpushard::cpu
