#include "patterns.hpp"

#include <cmath>
#include <map>
#include <optional>

namespace dpushard::onnximport {
namespace {

class Matcher {
 public:
  Matcher(std::vector<Node>& nodes, const ConstLookup& constant,
          const std::set<std::string>& graph_outputs)
      : nodes_(nodes), constant_(constant), outputs_(graph_outputs) {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      for (const auto& in : nodes_[i].inputs)
        if (!in.empty()) consumers_[in].push_back(i);
      for (const auto& out : nodes_[i].outputs) producer_[out] = i;
    }
  }

  // The one node consuming `tensor` (which is no graph output), or nullopt.
  std::optional<std::size_t> sole_consumer(const std::string& tensor) const {
    if (outputs_.count(tensor)) return std::nullopt;
    auto it = consumers_.find(tensor);
    if (it == consumers_.end() || it->second.size() != 1) return std::nullopt;
    if (taken_.count(it->second[0])) return std::nullopt;
    return it->second[0];
  }

  std::vector<std::size_t> consumers(const std::string& tensor) const {
    auto it = consumers_.find(tensor);
    return it == consumers_.end() ? std::vector<std::size_t>{} : it->second;
  }

  std::optional<std::size_t> producer(const std::string& tensor) const {
    auto it = producer_.find(tensor);
    if (it == producer_.end() || taken_.count(it->second)) return std::nullopt;
    return it->second;
  }

  std::optional<double> scalar(const std::string& tensor) const {
    const ConstTensor* t = constant_(tensor);
    if (t == nullptr || t->values.size() != 1) return std::nullopt;
    return t->values[0];
  }

  bool is_const(const std::string& tensor) const { return constant_(tensor) != nullptr; }
  bool is_output(const std::string& tensor) const { return outputs_.count(tensor) != 0; }

  bool is(std::size_t i, const char* type) const { return nodes_[i].type == type; }

  // For a binary node with `known` as one input, the other input.
  static std::optional<std::string> other_input(const Node& n, const std::string& known) {
    if (n.inputs.size() != 2) return std::nullopt;
    if (n.inputs[0] == known) return n.inputs[1];
    if (n.inputs[1] == known) return n.inputs[0];
    return std::nullopt;
  }

  bool scalar_is(const std::string& tensor, double value, double tolerance) const {
    auto v = scalar(tensor);
    return v && std::fabs(*v - value) <= tolerance;
  }

  void replace(const std::vector<std::size_t>& matched, Node fused) {
    std::size_t last = 0;
    for (auto i : matched) {
      taken_.insert(i);
      last = std::max(last, i);
    }
    fused_[last] = std::move(fused);
  }

  bool taken(std::size_t i) const { return taken_.count(i) != 0; }

  std::vector<Node> result() const {
    std::vector<Node> out;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      auto f = fused_.find(i);
      if (f != fused_.end())
        out.push_back(f->second);
      else if (!taken_.count(i))
        out.push_back(nodes_[i]);
    }
    return out;
  }

  const Node& node(std::size_t i) const { return nodes_[i]; }

 private:
  std::vector<Node>& nodes_;
  const ConstLookup& constant_;
  const std::set<std::string>& outputs_;
  std::map<std::string, std::vector<std::size_t>> consumers_;
  std::map<std::string, std::size_t> producer_;
  std::set<std::size_t> taken_;
  std::map<std::size_t, Node> fused_;
};

bool last_axis_only(const Node& n) {
  const auto axes = n.attr_ints("axes", {});
  return axes.size() == 1 && axes[0] == -1 && n.attr_int("keepdims", 1) == 1 &&
         n.inputs.size() == 1;
}

void match_layernorm(Matcher& m, std::size_t r1) {
  const Node& mean = m.node(r1);
  if (!last_axis_only(mean)) return;
  const std::string x = mean.inputs[0];
  auto sub = m.sole_consumer(mean.outputs[0]);
  if (!sub || !m.is(*sub, "Sub") || m.node(*sub).inputs[0] != x ||
      m.node(*sub).inputs[1] != mean.outputs[0])
    return;
  const std::string d = m.node(*sub).outputs[0];
  auto users = m.consumers(d);
  if (users.size() != 2 || m.is_output(d)) return;
  std::size_t pow = users[0], div = users[1];
  if (m.is(div, "Pow")) std::swap(pow, div);
  if (!m.is(pow, "Pow") || !m.is(div, "Div") || m.node(pow).inputs[0] != d ||
      !m.scalar_is(m.node(pow).inputs[1], 2.0, 0.0) || m.node(div).inputs[0] != d)
    return;
  auto r2 = m.sole_consumer(m.node(pow).outputs[0]);
  if (!r2 || !m.is(*r2, "ReduceMean") || !last_axis_only(m.node(*r2))) return;
  auto add = m.sole_consumer(m.node(*r2).outputs[0]);
  if (!add || !m.is(*add, "Add")) return;
  auto eps_name = Matcher::other_input(m.node(*add), m.node(*r2).outputs[0]);
  if (!eps_name) return;
  auto eps = m.scalar(*eps_name);
  if (!eps) return;
  auto sqrt = m.sole_consumer(m.node(*add).outputs[0]);
  if (!sqrt || !m.is(*sqrt, "Sqrt")) return;
  if (m.node(div).inputs[1] != m.node(*sqrt).outputs[0]) return;

  std::vector<std::size_t> matched = {r1, *sub, pow, div, *r2, *add, *sqrt};
  std::string out = m.node(div).outputs[0];
  std::string gamma, beta;
  if (auto mul = m.sole_consumer(out); mul && m.is(*mul, "Mul")) {
    auto g = Matcher::other_input(m.node(*mul), out);
    if (g && m.is_const(*g)) {
      gamma = *g;
      matched.push_back(*mul);
      out = m.node(*mul).outputs[0];
      if (auto addb = m.sole_consumer(out); addb && m.is(*addb, "Add")) {
        auto b = Matcher::other_input(m.node(*addb), out);
        if (b && m.is_const(*b)) {
          beta = *b;
          matched.push_back(*addb);
          out = m.node(*addb).outputs[0];
        }
      }
    }
  }
  Node ln;
  ln.type = "LayerNormalization";
  ln.name = mean.name;
  ln.inputs = {x, gamma, beta};
  ln.outputs = {out};
  ln.attrs["axis"] = std::int64_t{-1};
  ln.attrs["epsilon"] = *eps;
  m.replace(matched, std::move(ln));
}

void match_gelu(Matcher& m, std::size_t erf) {
  const Node& e = m.node(erf);
  if (e.inputs.size() != 1) return;
  auto scale = m.producer(e.inputs[0]);
  if (!scale || !m.sole_consumer(e.inputs[0])) return;
  const Node& s = m.node(*scale);
  if (s.inputs.size() != 2) return;
  const std::string x = s.inputs[0];
  const bool div = s.type == "Div" && m.scalar_is(s.inputs[1], std::sqrt(2.0), 1e-4);
  const bool mul = s.type == "Mul" && m.scalar_is(s.inputs[1], std::sqrt(0.5), 1e-4);
  if (!div && !mul) return;
  auto add = m.sole_consumer(e.outputs[0]);
  if (!add || !m.is(*add, "Add")) return;
  auto one = Matcher::other_input(m.node(*add), e.outputs[0]);
  if (!one || !m.scalar_is(*one, 1.0, 0.0)) return;
  auto m1 = m.sole_consumer(m.node(*add).outputs[0]);
  if (!m1 || !m.is(*m1, "Mul")) return;
  auto y = Matcher::other_input(m.node(*m1), m.node(*add).outputs[0]);
  if (!y) return;
  std::vector<std::size_t> matched = {*scale, erf, *add, *m1};
  std::string out;
  if (*y == x) {
    // x * (1 + erf) * 0.5
    auto m2 = m.sole_consumer(m.node(*m1).outputs[0]);
    if (!m2 || !m.is(*m2, "Mul")) return;
    auto half = Matcher::other_input(m.node(*m2), m.node(*m1).outputs[0]);
    if (!half || !m.scalar_is(*half, 0.5, 0.0)) return;
    matched.push_back(*m2);
    out = m.node(*m2).outputs[0];
  } else {
    // (x * 0.5) * (1 + erf)
    auto h = m.producer(*y);
    if (!h || !m.is(*h, "Mul") || !m.sole_consumer(*y)) return;
    auto half = Matcher::other_input(m.node(*h), x);
    if (!half || !m.scalar_is(*half, 0.5, 0.0)) return;
    matched.push_back(*h);
    out = m.node(*m1).outputs[0];
  }
  Node gelu;
  gelu.type = "Gelu";
  gelu.name = m.node(*scale).name;
  gelu.inputs = {x};
  gelu.outputs = {out};
  m.replace(matched, std::move(gelu));
}

void match_hardswish(Matcher& m, std::size_t hs) {
  const Node& h = m.node(hs);
  if (h.inputs.size() != 1 || std::fabs(h.attr_float("alpha", 0.2) - 1.0 / 6.0) > 1e-6 ||
      std::fabs(h.attr_float("beta", 0.5) - 0.5) > 1e-6)
    return;
  auto mul = m.sole_consumer(h.outputs[0]);
  if (!mul || !m.is(*mul, "Mul")) return;
  auto x = Matcher::other_input(m.node(*mul), h.outputs[0]);
  if (!x || *x != h.inputs[0]) return;
  Node n;
  n.type = "HardSwish";
  n.name = h.name;
  n.inputs = {*x};
  n.outputs = {m.node(*mul).outputs[0]};
  m.replace({hs, *mul}, std::move(n));
}

}  // namespace

std::vector<Node> fuse_patterns(std::vector<Node> nodes, const ConstLookup& constant,
                                const std::set<std::string>& graph_outputs) {
  Matcher m(nodes, constant, graph_outputs);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (m.taken(i)) continue;
    if (nodes[i].type == "ReduceMean")
      match_layernorm(m, i);
    else if (nodes[i].type == "Erf")
      match_gelu(m, i);
    else if (nodes[i].type == "HardSigmoid")
      match_hardswish(m, i);
  }
  return m.result();
}

}  // namespace dpushard::onnximport
