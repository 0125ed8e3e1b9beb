#include "dnnl_context.hpp"

#include <algorithm>
#include <utility>

#include "exact_sums.hpp"

namespace dpushard::cpu {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& cpu_stream() {
  static dnnl::stream stream(cpu_engine());
  return stream;
}

bool is_constant(const lowering::Lowering& lowering, const Op& op, std::string_view arg,
                 std::size_t index) {
  const auto& producers = op.producers(arg);
  if (index >= producers.size()) return false;
  const Graph& graph = lowering.graph();
  const Op& fix = graph.op(producers[index]);
  if (fix.type != "fix") return false;
  const auto& sources = fix.producers("input");
  return sources.size() == 1 && graph.op(sources.front()).type == "const";
}

Alignment align(const lowering::Lowering& lowering, int product_fp,
                std::optional<lowering::SlotId> bias) {
  Alignment a;
  a.acc_exp = product_fp;
  if (bias) a.acc_exp = std::max(product_fp, lowering.slot(*bias).fix_point);
  a.acc_align = a.acc_exp - product_fp;
  a.bias_align = bias ? a.acc_exp - lowering.slot(*bias).fix_point : 0;
  return a;
}

dnnl::memory reorder_weights(const dnnl::memory::desc& plain, const dnnl::memory::desc& layout,
                             const std::vector<std::int8_t>& values) {
  dnnl::memory out(layout, cpu_engine());
  dnnl::memory in(plain, cpu_engine(), const_cast<std::int8_t*>(values.data()));
  dnnl::reorder(in, out).execute(cpu_stream(), in, out);
  cpu_stream().wait();
  return out;
}

std::optional<std::vector<dnnl::memory>> exact_weights(
    const dnnl::memory::desc& plain, const dnnl::memory::desc& layout,
    const std::vector<std::int8_t>& values, std::int64_t channels,
    const std::function<std::int64_t(std::size_t)>& channel_of) {
  if (weight_sums_exact(values, channels, channel_of))
    return std::vector<dnnl::memory>{reorder_weights(plain, layout, values)};
  const Digits digits = split_digits(values);
  if (!weight_sums_exact(digits.lo, channels, channel_of) ||
      !weight_sums_exact(digits.hi, channels, channel_of))
    return std::nullopt;
  return std::vector<dnnl::memory>{reorder_weights(plain, layout, digits.lo),
                                   reorder_weights(plain, layout, digits.hi)};
}

DnnlKernel::DnnlKernel(dnnl::primitive primitive, const dnnl::memory::desc& src_md,
                       const dnnl::memory::desc& weights_md, const dnnl::memory::desc& dst_md,
                       const dnnl::memory::desc& scratch_md, std::vector<dnnl::memory> weights,
                       lowering::SlotId src_slot, std::optional<lowering::SlotId> weight_slot,
                       lowering::SlotId out_slot, std::int64_t rows, std::int64_t channels,
                       Requantizer requantizer)
    : primitive_(std::move(primitive)),
      src_(src_md, cpu_engine(), DNNL_MEMORY_NONE),
      scratch_(scratch_md, cpu_engine()),
      weights_(std::move(weights)),
      src_slot_(src_slot),
      weight_slot_(weight_slot),
      out_slot_(out_slot),
      rows_(rows),
      requantizer_(std::move(requantizer)) {
  if (weights_.empty())
    weights_.push_back(dnnl::memory(weights_md, cpu_engine(), DNNL_MEMORY_NONE));
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    sums_.emplace_back(static_cast<std::size_t>(rows * channels));
    dst_.emplace_back(dst_md, cpu_engine(), sums_.back().data());
  }
}

void DnnlKernel::run(lowering::Slots& slots) {
  src_.set_data_handle(slots[src_slot_].data.data());
  if (weight_slot_) weights_[0].set_data_handle(slots[*weight_slot_].data.data());
  for (std::size_t i = 0; i < weights_.size(); ++i)
    primitive_.execute(cpu_stream(), {{DNNL_ARG_SRC, src_},
                                      {DNNL_ARG_WEIGHTS, weights_[i]},
                                      {DNNL_ARG_DST, dst_[i]},
                                      {DNNL_ARG_SCRATCHPAD, scratch_}});
  cpu_stream().wait();
  requantizer_.run(sums_[0].data(), sums_.size() > 1 ? sums_[1].data() : nullptr, rows_,
                   slots[out_slot_].data.data());
}

FusedDnnlKernel::FusedDnnlKernel(dnnl::primitive primitive, const dnnl::memory::desc& src_md,
                                 const dnnl::memory::desc& dst_md,
                                 const dnnl::memory::desc& scratch_md,
                                 const dnnl::memory::desc& bias_md, dnnl::memory weights,
                                 std::vector<float> bias, lowering::SlotId src_slot,
                                 lowering::SlotId out_slot)
    : primitive_(std::move(primitive)),
      src_(src_md, cpu_engine(), DNNL_MEMORY_NONE),
      dst_(dst_md, cpu_engine(), DNNL_MEMORY_NONE),
      scratch_(scratch_md, cpu_engine()),
      weights_(std::move(weights)),
      bias_values_(std::move(bias)),
      bias_(bias_md, cpu_engine(), bias_values_.data()),
      src_slot_(src_slot),
      out_slot_(out_slot) {}

void FusedDnnlKernel::run(lowering::Slots& slots) {
  src_.set_data_handle(slots[src_slot_].data.data());
  dst_.set_data_handle(slots[out_slot_].data.data());
  primitive_.execute(cpu_stream(), {{DNNL_ARG_SRC, src_},
                                    {DNNL_ARG_WEIGHTS, weights_},
                                    {DNNL_ARG_BIAS, bias_},
                                    {DNNL_ARG_DST, dst_},
                                    {DNNL_ARG_SCRATCHPAD, scratch_}});
  cpu_stream().wait();
}

}  // namespace dpushard::cpu
