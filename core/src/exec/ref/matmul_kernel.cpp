// matmul and inner-product in DPU integer arithmetic: the K-long sum of a_q * b_q, aligned
// with an optional bias b_q like a conv, then the epilogue (see conv_kernel.cpp).

#include <algorithm>
#include <string>

#include "../lowering/epilogue.hpp"
#include "dpushard/graph/attr.hpp"
#include "kernels.hpp"

namespace dpushard::ref {

namespace {

struct MatmulGeometry {
  std::int64_t batch = 1, m = 0, k = 0, n = 0;
  bool transpose_a = false, transpose_b = false;
  bool b_batched = false;  // b has its own matrix per batch entry (else one, shared)
};

class MatmulKernel final : public Kernel {
 public:
  MatmulKernel(MatmulGeometry geometry, SlotId a, SlotId b, std::optional<SlotId> bias,
               int acc_align, int bias_align, Epilogue epilogue, SlotId out)
      : g_(geometry),
        a_(a),
        b_(b),
        bias_(bias),
        acc_align_(acc_align),
        bias_align_(bias_align),
        epilogue_(epilogue),
        out_(out) {}

  void run(Slots& slots) override {
    const std::int8_t* a = slots[a_].data.data();
    const std::int8_t* b = slots[b_].data.data();
    const std::int8_t* bias = bias_ ? slots[*bias_].data.data() : nullptr;
    std::int8_t* y = slots[out_].data.data();
    const std::int64_t a_step = g_.transpose_a ? g_.m : 1;  // stride between k entries of a
    const std::int64_t b_step = g_.transpose_b ? 1 : g_.n;  // stride between k entries of b
    for (std::int64_t t = 0; t < g_.batch; ++t) {
      const std::int8_t* a_mat = a + t * g_.m * g_.k;
      const std::int8_t* b_mat = b + (g_.b_batched ? t * g_.k * g_.n : 0);
      for (std::int64_t i = 0; i < g_.m; ++i)
        for (std::int64_t j = 0; j < g_.n; ++j) {
          const std::int8_t* a_row = a_mat + (g_.transpose_a ? i : i * g_.k);
          const std::int8_t* b_col = b_mat + (g_.transpose_b ? j * g_.k : j);
          std::int64_t acc = 0;
          for (std::int64_t kk = 0; kk < g_.k; ++kk)
            acc += std::int64_t{a_row[kk * a_step]} * b_col[kk * b_step];
          acc *= std::int64_t{1} << acc_align_;
          if (bias != nullptr) acc += std::int64_t{bias[j]} * (std::int64_t{1} << bias_align_);
          y[(t * g_.m + i) * g_.n + j] = epilogue_(acc);
        }
    }
  }

 private:
  MatmulGeometry g_;
  SlotId a_, b_;
  std::optional<SlotId> bias_;
  int acc_align_, bias_align_;
  Epilogue epilogue_;
  SlotId out_;
};

// matmul(a, b): a [..., M, K] ([..., K, M] when transpose_a), b [K, N] ([N, K] when
// transpose_b), either shared or with the same leading dimensions as a.
MatmulGeometry matmul_geometry(const Op& op, const QTensor& a, const QTensor& b) {
  MatmulGeometry g;
  g.transpose_a = bool_attr(op.attrs, "transpose_a", false);
  g.transpose_b = bool_attr(op.attrs, "transpose_b", false);
  const auto ra = a.shape.size();
  const auto rb = b.shape.size();
  if (ra < 2 || rb < 2) fail(op, "operands must have rank 2 or more");
  g.m = a.shape[ra - (g.transpose_a ? 1 : 2)];
  g.k = a.shape[ra - (g.transpose_a ? 2 : 1)];
  const std::int64_t b_k = b.shape[rb - (g.transpose_b ? 1 : 2)];
  g.n = b.shape[rb - (g.transpose_b ? 2 : 1)];
  if (b_k != g.k)
    fail(op, "inner dimensions differ: a " + shape_text(a.shape) + ", b " + shape_text(b.shape));
  g.batch = element_count({a.shape.begin(), a.shape.end() - 2});
  if (rb > 2) {
    if (rb != ra || !std::equal(b.shape.begin(), b.shape.end() - 2, a.shape.begin()))
      fail(op, "batch dimensions differ: a " + shape_text(a.shape) + ", b " + shape_text(b.shape));
    g.b_batched = true;
  }
  return g;
}

// inner-product(x, weights [N, K]): x flattened from `axis` into K.
MatmulGeometry inner_product_geometry(const Op& op, const QTensor& x, const QTensor& w) {
  MatmulGeometry g;
  g.transpose_b = true;
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  std::int64_t axis = int_attr(op.attrs, "axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) fail(op, "axis out of range for input " + shape_text(x.shape));
  const auto split = x.shape.begin() + axis;
  g.m = element_count({x.shape.begin(), split});
  g.k = element_count({split, x.shape.end()});
  if (w.shape.size() != 2 || w.shape[1] != g.k)
    fail(op, "weights " + shape_text(w.shape) + " must be [N, " + std::to_string(g.k) + "]");
  g.n = w.shape[0];
  return g;
}

}  // namespace

std::unique_ptr<Kernel> make_matmul(const Chain& chain, const Lowering& lowering) {
  const Op& op = chain.producer;
  SlotId a = 0, b = 0;
  MatmulGeometry g;
  if (op.type == "inner-product") {
    a = lowering.arg_slot(op, "input", 0);
    b = lowering.arg_slot(op, "weights", 0);
    g = inner_product_geometry(op, lowering.slot(a), lowering.slot(b));
  } else {
    a = lowering.arg_slot(op, "input", 0);
    b = lowering.arg_slot(op, "input", 1);
    g = matmul_geometry(op, lowering.slot(a), lowering.slot(b));
  }
  const std::optional<SlotId> bias = lowering.optional_arg_slot(op, "bias", 0);
  const QTensor& yt = lowering.slot(chain.out);
  if (element_count(yt.shape) != g.batch * g.m * g.n || yt.shape.empty() || yt.shape.back() != g.n)
    fail(op, "output " + shape_text(yt.shape) + " does not fit " + std::to_string(g.batch) +
                 " x [" + std::to_string(g.m) + ", " + std::to_string(g.n) + "]");

  const int product_fp = lowering.slot(a).fix_point + lowering.slot(b).fix_point;
  int acc_exp = product_fp;
  if (bias) {
    const QTensor& bt = lowering.slot(*bias);
    if (element_count(bt.shape) != g.n)
      fail(op,
           "bias " + shape_text(bt.shape) + " does not have " + std::to_string(g.n) + " values");
    acc_exp = std::max(product_fp, bt.fix_point);
  }
  const int acc_align = acc_exp - product_fp;
  const int bias_align = bias ? acc_exp - lowering.slot(*bias).fix_point : 0;
  if (acc_align > 24 || bias_align > 24) fail(op, "bias shift is out of range");
  return std::make_unique<MatmulKernel>(g, a, b, bias, acc_align, bias_align,
                                        Epilogue(chain, acc_exp), chain.out);
}

}  // namespace dpushard::ref
