#include "converter.hpp"

#include <algorithm>
#include <numeric>

#include "const_fold.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard::onnximport {

Shape Act::ir_shape() const {
  Shape out;
  for (auto p : perm) out.push_back(shape[static_cast<std::size_t>(p)]);
  return out;
}

Perm identity_perm(std::size_t rank) {
  Perm p(rank);
  std::iota(p.begin(), p.end(), 0);
  return p;
}

Perm nhwc_perm() { return {0, 2, 3, 1}; }

Converter::Converter(std::string graph_name, std::int64_t opset, std::vector<Node> nodes)
    : graph_name_(graph_name), opset_(opset), nodes_(std::move(nodes)), w_(std::move(graph_name)) {
  for (const Node& n : nodes_)
    for (const auto& in : n.inputs)
      if (!in.empty()) consumers_[in].push_back(&n);
}

void Converter::add_input(const std::string& name, const Shape& shape) {
  Act a;
  a.shape = shape;
  a.perm = shape.size() == 4 ? nhwc_perm() : identity_perm(shape.size());
  a.op = w_.data(name, a.ir_shape());
  if (a.op != name) throw Error("input '" + name + "' clashes with another name");
  inputs_.push_back({name, shape, a.ir_shape()});
  values_[name] = std::move(a);
}

void Converter::add_constant(const std::string& name, ConstTensor value) {
  values_[name] = std::move(value);
}

const Val& Converter::value(const Node& n, std::size_t i) const {
  const std::string& name = n.input(i);
  if (name.empty()) throw Error(n.who() + ": missing input #" + std::to_string(i));
  auto it = values_.find(name);
  if (it == values_.end())
    throw Error(n.who() + ": input '" + name + "' is not produced by any earlier node");
  return it->second;
}

bool Converter::is_const(const Node& n, std::size_t i) const {
  return std::holds_alternative<ConstTensor>(value(n, i));
}

const ConstTensor& Converter::const_input(const Node& n, std::size_t i) const {
  const Val& v = value(n, i);
  if (const auto* c = std::get_if<ConstTensor>(&v)) return *c;
  throw Error(n.who() + ": input '" + n.input(i) + "' must be a constant (initializer)");
}

Act Converter::act_input(const Node& n, std::size_t i) const {
  const Val& v = value(n, i);
  if (const auto* a = std::get_if<Act>(&v)) {
    if (!a->row_order.empty() && n.type != "Gemm" && n.type != "MatMul")
      throw Error(n.who() + ": input '" + n.input(i) + "' is a flattened NCHW map");
    return *a;
  }
  throw Error(n.who() + ": input '" + n.input(i) +
              "' is a constant where an activation is expected");
}

std::optional<ConstTensor> Converter::optional_const(const Node& n, std::size_t i) const {
  if (n.input(i).empty()) return std::nullopt;
  return const_input(n, i);
}

void Converter::set_act(const Node& n, const std::string& op, Shape shape, Perm perm) {
  Act a;
  a.op = op;
  a.shape = std::move(shape);
  a.perm = std::move(perm);
  if (w_.shape(op) != a.ir_shape())
    throw Error(n.who() + ": internal layout mismatch, IR shape " + shape_text(w_.shape(op)) +
                " for ONNX shape " + shape_text(a.shape));
  set(n.outputs.at(0), std::move(a));
}

std::vector<const Node*> Converter::consumers(const std::string& tensor) const {
  auto it = consumers_.find(tensor);
  return it == consumers_.end() ? std::vector<const Node*>{} : it->second;
}

const Node* Converter::sole_consumer(const std::string& tensor) const {
  if (graph_outputs_.count(tensor)) return nullptr;
  auto c = consumers(tensor);
  return c.size() == 1 ? c[0] : nullptr;
}

Act Converter::to_layout(const Act& a, const Perm& perm, const std::string& hint) {
  if (a.perm == perm) return a;
  if (!a.row_order.empty()) throw Error(hint + ": cannot move a flattened NCHW map");
  const std::size_t rank = perm.size();
  Perm order(rank);
  for (std::size_t i = 0; i < rank; ++i)
    order[i] = std::find(a.perm.begin(), a.perm.end(), perm[i]) - a.perm.begin();
  Act out = a;
  out.perm = perm;
  const Shape old_ir = a.ir_shape();
  const Shape new_ir = out.ir_shape();
  // Moving only size-1 axes leaves memory unchanged: a reshape, or nothing.
  std::int64_t last = -1;
  bool in_order = true;
  for (auto j : order) {
    if (old_ir[static_cast<std::size_t>(j)] == 1) continue;
    if (j < last) in_order = false;
    last = j;
  }
  if (in_order) {
    if (new_ir != old_ir)
      out.op =
          w_.op(hint + "_reshape", "reshape", {{"input", {a.op}}}, {{"shape", to_i32(new_ir)}});
    return out;
  }
  out.op = w_.op(hint + "_transpose", "transpose", {{"input", {a.op}}}, {{"order", to_i32(order)}});
  return out;
}

Act Converter::to_nhwc(const Act& a, const std::string& hint) {
  if (a.shape.size() != 4)
    throw Error(hint + ": expects a 4-D NCHW input, got " + shape_text(a.shape));
  return to_layout(a, nhwc_perm(), hint);
}

std::optional<Act> Converter::reshape_in_place(const Act& a, const Shape& target,
                                               const std::string& hint) {
  if (element_count(target) != element_count(a.shape))
    throw Error(hint + ": cannot reshape " + shape_text(a.shape) + " to " + shape_text(target));
  if (!a.row_order.empty()) throw Error(hint + ": cannot reshape a flattened NCHW map");
  // Group the non-unit input and output axes into runs of equal element count; the
  // reshape works in the current layout when each input run is contiguous and in order
  // in IR memory.
  std::vector<std::int64_t> sa, ta;
  for (std::size_t i = 0; i < a.shape.size(); ++i)
    if (a.shape[i] != 1) sa.push_back(static_cast<std::int64_t>(i));
  for (std::size_t i = 0; i < target.size(); ++i)
    if (target[i] != 1) ta.push_back(static_cast<std::int64_t>(i));
  std::map<std::int64_t, std::int64_t> pos;  // ONNX axis -> rank among non-unit IR axes
  for (auto p : a.perm)
    if (a.shape[static_cast<std::size_t>(p)] != 1) pos[p] = static_cast<std::int64_t>(pos.size());
  struct Group {
    std::vector<std::int64_t> in, out;
  };
  std::vector<Group> groups;
  bool feasible = true;
  std::size_t i = 0, j = 0;
  auto dim_s = [&](std::size_t k) { return a.shape[static_cast<std::size_t>(sa[k])]; };
  auto dim_t = [&](std::size_t k) { return target[static_cast<std::size_t>(ta[k])]; };
  while (i < sa.size() && j < ta.size()) {
    Group g{{sa[i]}, {ta[j]}};
    std::int64_t ps = dim_s(i++), pt = dim_t(j++);
    while (ps != pt) {
      if (ps < pt && i < sa.size()) {
        g.in.push_back(sa[i]);
        ps *= dim_s(i++);
      } else if (pt < ps && j < ta.size()) {
        g.out.push_back(ta[j]);
        pt *= dim_t(j++);
      } else {
        feasible = false;
        break;
      }
    }
    if (!feasible) break;
    for (std::size_t k = 1; k < g.in.size(); ++k)
      if (pos[g.in[k]] != pos[g.in[k - 1]] + 1) feasible = false;
    groups.push_back(std::move(g));
  }
  Act out;
  out.shape = target;
  if (feasible) {
    std::sort(groups.begin(), groups.end(),
              [&](const Group& x, const Group& y) { return pos[x.in[0]] < pos[y.in[0]]; });
    for (std::size_t k = 0; k < target.size(); ++k)
      if (target[k] == 1) out.perm.push_back(static_cast<std::int64_t>(k));
    for (const auto& g : groups) out.perm.insert(out.perm.end(), g.out.begin(), g.out.end());
    const Shape new_ir = out.ir_shape();
    if (new_ir == a.ir_shape())
      out.op = a.op;
    else
      out.op = w_.op(hint, "reshape", {{"input", {a.op}}}, {{"shape", to_i32(new_ir)}});
    return out;
  }
  return std::nullopt;
}

Act Converter::reshape(const Act& a, const Shape& target, const std::string& hint) {
  if (auto in_place = reshape_in_place(a, target, hint)) return *in_place;
  const Act m = to_identity(a, hint);
  Act out;
  out.shape = target;
  out.perm = identity_perm(target.size());
  out.op = w_.op(hint, "reshape", {{"input", {m.op}}}, {{"shape", to_i32(target)}});
  return out;
}

ConstTensor Converter::const_in_layout(const ConstTensor& c, const Act& a, const std::string& who) {
  if (c.shape.size() > a.shape.size())
    throw Error(who + ": constant of shape " + shape_text(c.shape) +
                " has a higher rank than the activation " + shape_text(a.shape));
  ConstTensor t = c;
  t.shape.insert(t.shape.begin(), a.shape.size() - c.shape.size(), 1);
  broadcast_shapes(t.shape, a.shape, who);
  return transpose(t, a.perm);
}

std::string Converter::ir_const(const std::string& hint, const ConstTensor& c) {
  Shape shape = c.shape.empty() ? Shape{1} : c.shape;
  return w_.constant(hint, shape, c.floats());
}

Act Converter::select(const Act& a, std::int64_t axis, const std::vector<std::int64_t>& indices,
                      const std::string& hint) {
  const std::int64_t dim = a.shape[static_cast<std::size_t>(axis)];
  std::vector<std::int64_t> norm;
  for (auto idx : indices) {
    const std::int64_t k = idx < 0 ? idx + dim : idx;
    if (k < 0 || k >= dim)
      throw Error(hint + ": index " + std::to_string(idx) + " out of range for dimension " +
                  std::to_string(dim));
    norm.push_back(k);
  }
  std::vector<std::int64_t> all(static_cast<std::size_t>(dim));
  std::iota(all.begin(), all.end(), 0);
  if (norm == all) return a;
  Perm last;
  for (auto p : a.perm)
    if (p != axis) last.push_back(p);
  last.push_back(axis);
  Act b = to_layout(a, last, hint);
  const auto n = static_cast<std::int64_t>(norm.size());
  if (b.shape.size() == 1) b = reshape(b, {1, dim}, hint + "_2d");
  std::vector<float> sel(static_cast<std::size_t>(n * dim), 0.0f);
  for (std::int64_t j = 0; j < n; ++j)
    sel[static_cast<std::size_t>(j * dim + norm[static_cast<std::size_t>(j)])] = 1.0f;
  const std::string weights = w_.constant(hint + "_select", {n, dim}, sel);
  Act out = b;
  out.op = w_.op(hint, "matmul", {{"input", {b.op, weights}}},
                 {{"transpose_a", false}, {"transpose_b", true}});
  out.shape[out.shape.size() == a.shape.size() ? static_cast<std::size_t>(axis) : 1] = n;
  if (a.shape.size() == 1) {
    Act flat;
    flat.shape = {n};
    flat.perm = {0};
    flat.op = w_.op(hint + "_1d", "reshape", {{"input", {out.op}}}, {{"shape", to_i32({n})}});
    return flat;
  }
  return out;
}

Act Converter::drop_axis(const Act& a, std::int64_t axis, const std::string& hint) {
  if (a.shape[static_cast<std::size_t>(axis)] != 1)
    throw Error(hint + ": cannot drop axis " + std::to_string(axis) + " of " + shape_text(a.shape));
  Shape target = a.shape;
  target.erase(target.begin() + axis);
  return reshape(a, target, hint);
}

const std::map<std::string, Converter::Handler>& Converter::handlers() {
  static const std::map<std::string, Handler> kHandlers = {
      {"Conv", &Converter::conv},
      {"BatchNormalization", &Converter::batch_norm},
      {"Pad", &Converter::pad},
      {"MaxPool", &Converter::pool},
      {"AveragePool", &Converter::pool},
      {"GlobalAveragePool", &Converter::global_pool},
      {"GlobalMaxPool", &Converter::global_pool},
      {"ReduceMean", &Converter::reduce_mean},
      {"Gemm", &Converter::gemm},
      {"MatMul", &Converter::matmul},
      {"Add", &Converter::add_sub},
      {"Sub", &Converter::add_sub},
      {"Mul", &Converter::mul_div},
      {"Div", &Converter::mul_div},
      {"Relu", &Converter::unary},
      {"Sigmoid", &Converter::unary},
      {"Tanh", &Converter::unary},
      {"HardSwish", &Converter::unary},
      {"Gelu", &Converter::unary},
      {"Clip", &Converter::clip},
      {"LeakyRelu", &Converter::leaky_relu},
      {"HardSigmoid", &Converter::hard_sigmoid},
      {"Softmax", &Converter::softmax},
      {"LayerNormalization", &Converter::layer_norm},
      {"Concat", &Converter::concat},
      {"Flatten", &Converter::flatten},
      {"Reshape", &Converter::reshape_node},
      {"Squeeze", &Converter::squeeze},
      {"Unsqueeze", &Converter::unsqueeze},
      {"Transpose", &Converter::transpose_node},
      {"Slice", &Converter::slice},
      {"Gather", &Converter::gather},
      {"Split", &Converter::split},
      {"Identity", &Converter::passthrough},
      {"Dropout", &Converter::passthrough},
      {"Cast", &Converter::passthrough},
      {"Expand", &Converter::expand},
      {"Shape", &Converter::shape_of},
  };
  return kHandlers;
}

bool Converter::foldable(const Node& n) const {
  if (!is_foldable_type(n.type)) return false;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i].empty()) continue;
    auto it = values_.find(n.inputs[i]);
    if (it == values_.end() || !std::holds_alternative<ConstTensor>(it->second)) return false;
  }
  return true;
}

void Converter::fold(const Node& n) {
  std::vector<const ConstTensor*> in;
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    in.push_back(n.inputs[i].empty() ? nullptr : &std::get<ConstTensor>(values_.at(n.inputs[i])));
  auto out = fold_node(n, in, opset_);
  for (std::size_t i = 0; i < out.size() && i < n.outputs.size(); ++i)
    if (!n.outputs[i].empty()) set(n.outputs[i], std::move(out[i]));
}

void Converter::run() {
  for (const Node& n : nodes_) {
    if (absorbed_.count(&n)) continue;
    if (foldable(n)) {
      fold(n);
      continue;
    }
    auto it = handlers().find(n.type);
    if (it == handlers().end())
      throw Error("unsupported op '" + n.type + "' (node '" + n.name + "')");
    (this->*(it->second))(n);
    ++mapped_[n.type];
  }
}

OnnxImport Converter::finish(const std::vector<std::string>& outputs) {
  OnnxImport out;
  std::vector<std::string> ir_outputs;
  for (const auto& name : outputs) {
    auto it = values_.find(name);
    if (it == values_.end()) throw Error("output '" + name + "' is not produced by any node");
    const auto* a = std::get_if<Act>(&it->second);
    if (a == nullptr)
      throw Error("output '" + name + "' is a constant, not computed from an input");
    Act act = *a;
    if (!act.row_order.empty()) throw Error("output '" + name + "' is a flattened NCHW map");
    // 4-D maps leave in NHWC (the IR's layout); anything else in ONNX order.
    const bool nhwc = act.shape.size() == 4 && act.perm == nhwc_perm();
    if (!nhwc) act = to_identity(act, name + "_out");
    ir_outputs.push_back(act.op);
  }
  w_.prune(ir_outputs);
  out.graph = std::move(w_.graph());
  out.opset = opset_;
  out.mapped_ops = mapped_;
  out.inputs = inputs_;
  out.outputs = outputs;
  return out;
}

}  // namespace dpushard::onnximport
