// Fully connected layers (Gemm, MatMul with constant weights) and activation x
// activation MatMul (attention).
#include "converter.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard::onnximport {

void Converter::emit_linear(const Node& n, const Act& x_in, std::vector<float> weights_nk,
                            std::int64_t nout, std::optional<std::vector<float>> bias,
                            const std::string& out) {
  const Act x = x_in.row_order.empty() ? to_identity(x_in, n.name) : x_in;
  if (x.shape.size() < 2) throw Error(n.who() + ": input must have rank >= 2");
  const std::int64_t k = x.shape.back();
  if (static_cast<std::int64_t>(weights_nk.size()) != nout * k)
    throw Error(n.who() + ": weights do not match the input's " + std::to_string(k) + " features");
  if (!x.row_order.empty()) {
    // The input is an NCHW map flattened in NHWC order: permute the weights' columns.
    std::vector<float> permuted(weights_nk.size());
    for (std::int64_t o = 0; o < nout; ++o)
      for (std::int64_t j = 0; j < k; ++j)
        permuted[static_cast<std::size_t>(o * k + j)] =
            weights_nk[static_cast<std::size_t>(o * k + x.row_order[static_cast<std::size_t>(j)])];
    weights_nk = std::move(permuted);
  }
  std::vector<OpArg> args = {
      {"input", {x.op, w_.constant(n.name + "_weights", {nout, k}, weights_nk)}}};
  if (bias) args.push_back({"bias", {w_.constant(n.name + "_bias", {nout}, *bias)}});
  const std::string op =
      w_.op(n.name, "matmul", std::move(args), {{"transpose_a", false}, {"transpose_b", true}});
  Shape shape = x.shape;
  shape.back() = nout;
  Node o = n;
  o.outputs = {out};
  set_act(o, op, shape, identity_perm(shape.size()));
}

namespace {

std::optional<std::vector<float>> bias_of(const ConstTensor& c, std::int64_t nout, double beta,
                                          const std::string& who) {
  for (std::size_t i = 0; i + 1 < c.shape.size(); ++i)
    if (c.shape[i] != 1) return std::nullopt;
  if (!c.shape.empty() && c.shape.back() != nout && c.shape.back() != 1) return std::nullopt;
  const ConstTensor b = broadcast_to(c, {nout}, who);
  std::vector<float> out;
  for (double v : b.values) out.push_back(static_cast<float>(beta * v));
  return out;
}

}  // namespace

void Converter::gemm(const Node& n) {
  const Act a = act_input(n, 0);
  const ConstTensor& b = const_input(n, 1);
  if (n.attr_int("transA", 0) != 0) throw Error(n.who() + ": transA is not supported");
  if (a.shape.size() != 2 || b.shape.size() != 2)
    throw Error(n.who() + ": expects 2-D operands, got " + shape_text(a.shape) + " and " +
                shape_text(b.shape));
  const ConstTensor bnk = n.attr_int("transB", 0) ? b : transpose(b, {1, 0});
  const std::int64_t nout = bnk.shape[0];
  const double alpha = n.attr_float("alpha", 1.0);
  std::vector<float> w;
  for (double v : bnk.values) w.push_back(static_cast<float>(alpha * v));
  std::optional<std::vector<float>> bias;
  if (auto c = optional_const(n, 2)) {
    bias = bias_of(*c, nout, n.attr_float("beta", 1.0), n.who());
    if (!bias) throw Error(n.who() + ": C of shape " + shape_text(c->shape) + " is not a bias");
  }
  emit_linear(n, a, std::move(w), nout, std::move(bias), n.outputs.at(0));
}

void Converter::matmul(const Node& n) {
  if (is_const(n, 0)) throw Error(n.who() + ": a constant first operand is not supported");
  const Act a = act_input(n, 0);
  if (is_const(n, 1)) {
    const ConstTensor& b = const_input(n, 1);
    if (b.shape.size() != 2)
      throw Error(n.who() + ": constant operand must be 2-D, got " + shape_text(b.shape));
    const ConstTensor bnk = transpose(b, {1, 0});
    const std::int64_t nout = bnk.shape[0];
    std::optional<std::vector<float>> bias;
    std::string out = n.outputs.at(0);
    // An Add of a [N] constant right after is the Linear's bias.
    if (const Node* add = sole_consumer(out); add != nullptr && add->type == "Add") {
      const std::string& other = add->inputs.at(0) == out ? add->inputs.at(1) : add->inputs.at(0);
      auto it = values_.find(other);
      if (it != values_.end())
        if (const auto* c = std::get_if<ConstTensor>(&it->second)) {
          bias = bias_of(*c, nout, 1.0, add->who());
          if (bias) {
            absorb(add);
            ++mapped_["Add"];
            out = add->outputs.at(0);
          }
        }
    }
    emit_linear(n, a, bnk.floats(), nout, std::move(bias), out);
    return;
  }
  Act b = act_input(n, 1);
  const Act ai = to_identity(a, n.name + "_a");
  if (a.shape.size() < 2 || b.shape.size() < 2)
    throw Error(n.who() + ": operands must have rank >= 2");
  Perm swapped = identity_perm(b.shape.size());
  std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
  bool transpose_b = false;
  std::string b_op;
  if (b.perm == swapped) {
    // b arrives as the transpose of a stored [.., N, K] tensor: use it as is.
    transpose_b = true;
    b_op = b.op;
  } else {
    b_op = to_identity(b, n.name + "_b").op;
  }
  const std::string op = w_.op(n.name, "matmul", {{"input", {ai.op, b_op}}},
                               {{"transpose_a", false}, {"transpose_b", transpose_b}});
  Shape batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2),
                                 Shape(b.shape.begin(), b.shape.end() - 2), n.who());
  batch.push_back(a.shape[a.shape.size() - 2]);
  batch.push_back(b.shape.back());
  set_act(n, op, batch, identity_perm(batch.size()));
}

}  // namespace dpushard::onnximport
