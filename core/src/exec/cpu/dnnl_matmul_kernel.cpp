// matmul / inner-product on oneDNN's matmul: s8 x s8 -> s32 over [batch, M, K] x [K, N]
// (transposes expressed as strides), then the ref requantisation. Constant weights are
// reordered once at load; activation x activation products read both slots as they are.

#include <string>
#include <utility>
#include <vector>

#include "dnnl_context.hpp"
#include "dnnl_kernels.hpp"
#include "dpushard/graph/attr.hpp"
#include "exact_sums.hpp"
#include "fused_epilogue.hpp"

namespace dpushard::cpu {

namespace {

using dnnl::memory;
using Type = memory::data_type;

struct Geometry {
  std::int64_t batch = 1, m = 0, k = 0, n = 0;
  bool transpose_a = false, transpose_b = false, b_batched = false;
};

// The shapes were validated by the ref factory; this only reads them (see matmul_kernel.cpp).
Geometry geometry_of(const Op& op, const QTensor& a, const QTensor& b) {
  Geometry g;
  if (op.type == "inner-product") {
    g.transpose_b = true;
    const auto rank = static_cast<std::int64_t>(a.shape.size());
    std::int64_t axis = int_attr(op.attrs, "axis", 1);
    if (axis < 0) axis += rank;
    const auto split = a.shape.begin() + axis;
    g.m = element_count({a.shape.begin(), split});
    g.k = element_count({split, a.shape.end()});
    g.n = b.shape[0];
    return g;
  }
  g.transpose_a = bool_attr(op.attrs, "transpose_a", false);
  g.transpose_b = bool_attr(op.attrs, "transpose_b", false);
  const auto ra = a.shape.size();
  const auto rb = b.shape.size();
  g.m = a.shape[ra - (g.transpose_a ? 1 : 2)];
  g.k = a.shape[ra - (g.transpose_a ? 2 : 1)];
  g.n = b.shape[rb - (g.transpose_b ? 2 : 1)];
  g.batch = element_count({a.shape.begin(), a.shape.end() - 2});
  g.b_batched = rb > 2;
  return g;
}

}  // namespace

std::unique_ptr<lowering::Kernel> make_dnnl_matmul(const lowering::Chain& chain,
                                                   const lowering::Lowering& lowering) {
  const Op& op = chain.producer;
  const bool inner = op.type == "inner-product";
  const lowering::SlotId a = lowering.arg_slot(op, "input", 0);
  const lowering::SlotId b =
      inner ? lowering.arg_slot(op, "weights", 0) : lowering.arg_slot(op, "input", 1);
  const bool constant_b =
      inner ? is_constant(lowering, op, "weights", 0) : is_constant(lowering, op, "input", 1);
  const std::optional<lowering::SlotId> bias = lowering.optional_arg_slot(op, "bias", 0);
  const QTensor& at = lowering.slot(a);
  const QTensor& bt = lowering.slot(b);
  const Geometry g = geometry_of(op, at, bt);
  if (!exact_int8_sums(g.k)) return nullptr;
  if (!constant_b && !activation_sums_exact(g.k)) return nullptr;  // no bound: ref runs it

  const std::int64_t b_batch = g.b_batched ? g.batch : 1;
  const memory::desc src_md(
      {g.batch, g.m, g.k}, Type::s8,
      g.transpose_a ? memory::dims{g.m * g.k, 1, g.m} : memory::dims{g.m * g.k, g.k, 1});
  const memory::desc w_plain(
      {b_batch, g.k, g.n}, Type::s8,
      g.transpose_b ? memory::dims{g.k * g.n, 1, g.k} : memory::dims{g.k * g.n, g.n, 1});
  const memory::desc w_md =
      constant_b ? memory::desc({b_batch, g.k, g.n}, Type::s8, memory::format_tag::any) : w_plain;
  const memory::desc dst_md({g.batch, g.m, g.n}, Type::s32, memory::format_tag::abc);

  const Alignment al = align(lowering, at.fix_point + bt.fix_point, bias);
  const QTensor* bias_values = bias ? &lowering.slot(*bias) : nullptr;
  // Output column (per batch of b) of each plain weight.
  const auto k = static_cast<std::size_t>(g.k), n = static_cast<std::size_t>(g.n);
  const bool transposed = g.transpose_b;
  const auto channel_of = [=](std::size_t i) -> std::int64_t {
    const std::size_t batch = i / (k * n), within = i % (k * n);
    return static_cast<std::int64_t>(batch * n + (transposed ? within / k : within % n));
  };

  // The whole chain in oneDNN when that is exact (fused_epilogue.hpp): constant weights
  // shared by every batch, so the bias is one row.
  if (constant_b && b_batch == 1 && weight_sums_exact(bt.data, g.n, channel_of))
    if (auto fused =
            fused_epilogue(chain, al.acc_exp, al.acc_align, al.bias_align, bias_values, g.n)) {
      const memory::desc y_md({g.batch, g.m, g.n}, Type::s8, memory::format_tag::abc);
      const memory::desc bias_md({1, 1, g.n}, Type::f32, memory::format_tag::abc);
      try {
        const dnnl::matmul::primitive_desc fused_pd(dnnl::matmul::desc(src_md, w_md, bias_md, y_md),
                                                    fused->attr, cpu_engine());
        return std::make_unique<FusedDnnlKernel>(
            dnnl::matmul(fused_pd), fused_pd.src_desc(), fused_pd.dst_desc(),
            fused_pd.scratchpad_desc(), fused_pd.bias_desc(),
            reorder_weights(w_plain, fused_pd.weights_desc(), bt.data), std::move(fused->bias), a,
            chain.out);
      } catch (const dnnl::error&) {
        // oneDNN has no fused implementation for this case: the s32 path below computes it
      }
    }

  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, w_md, dst_md), attr, cpu_engine());
  } catch (const dnnl::error&) {
    return nullptr;  // a layout oneDNN does not implement: the ref kernel runs it
  }
  std::vector<memory> weights;
  if (constant_b) {
    auto exact = exact_weights(w_plain, pd.weights_desc(), bt.data, b_batch * g.n, channel_of);
    if (!exact) return nullptr;  // sums beyond float precision even split: ref runs it
    weights = std::move(*exact);
  }
  return std::make_unique<DnnlKernel>(
      dnnl::matmul(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc(), pd.scratchpad_desc(),
      std::move(weights), a, constant_b ? std::nullopt : std::optional<lowering::SlotId>(b),
      chain.out, g.batch * g.m, g.n,
      Requantizer(chain, al.acc_exp, al.acc_align, al.bias_align, bias_values, g.n));
}

}  // namespace dpushard::cpu
