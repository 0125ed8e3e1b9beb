#include "dpushard/graph/graph.hpp"

#include <algorithm>
#include <cstring>
#include <queue>
#include <unordered_set>

namespace dpushard {

std::string_view data_type_name(DataType type, int bit_width) {
  switch (type) {
    case DataType::Float:
      return bit_width == 64 ? "float64" : (bit_width == 16 ? "float16" : "float32");
    case DataType::BFloat:
      return "bfloat16";
    case DataType::XInt:
      return bit_width == 8 ? "xint8" : "xint";
    case DataType::XUInt:
      return bit_width == 8 ? "xuint8" : "xuint";
    case DataType::Int:
      return bit_width == 8 ? "int8" : (bit_width == 32 ? "int32" : "int");
    case DataType::UInt:
      return bit_width == 8 ? "uint8" : "uint";
    case DataType::Unknown:
      break;
  }
  return "unknown";
}

std::int64_t TensorDesc::element_count() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

const std::vector<std::string>& Op::producers(std::string_view arg) const {
  static const std::vector<std::string> kEmpty;
  for (const auto& a : args)
    if (a.name == arg) return a.producers;
  return kEmpty;
}

std::vector<std::string> Op::all_producers() const {
  std::vector<std::string> out;
  for (const auto& a : args) out.insert(out.end(), a.producers.begin(), a.producers.end());
  return out;
}

std::string Subgraph::device() const { return string_attr(attrs, "device", ""); }

Op& Graph::add_op(Op op) {
  if (op.name.empty()) throw Error("graph " + name_ + ": op with an empty name");
  if (index_.count(op.name))
    throw Error("graph " + name_ + ": duplicate op name '" + op.name + "'");
  index_.emplace(op.name, ops_.size());
  ops_.push_back(std::move(op));
  return ops_.back();
}

void Graph::remove_op(std::string_view name) {
  auto it = index_.find(std::string(name));
  if (it == index_.end()) throw Error("graph " + name_ + ": no op '" + std::string(name) + "'");
  ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(it->second));
  reindex();
}

void Graph::reindex() {
  index_.clear();
  for (std::size_t i = 0; i < ops_.size(); ++i) index_.emplace(ops_[i].name, i);
}

const Op* Graph::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &ops_[it->second];
}

Op* Graph::find(std::string_view name) {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &ops_[it->second];
}

const Op& Graph::op(std::string_view name) const {
  if (const Op* o = find(name)) return *o;
  throw Error("graph " + name_ + ": no op named '" + std::string(name) + "'");
}

std::vector<const Op*> Graph::consumers(std::string_view name) const {
  std::vector<const Op*> out;
  for (const auto& o : ops_) {
    for (const auto& a : o.args) {
      if (std::find(a.producers.begin(), a.producers.end(), name) != a.producers.end()) {
        out.push_back(&o);
        break;
      }
    }
  }
  return out;
}

std::vector<std::size_t> Graph::topological_order() const {
  const std::size_t n = ops_.size();
  std::vector<std::size_t> pending(n, 0);
  std::vector<std::vector<std::size_t>> users(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::unordered_set<std::size_t> seen;
    for (const auto& a : ops_[i].args) {
      for (const auto& p : a.producers) {
        auto it = index_.find(p);
        if (it == index_.end())
          throw Error("op '" + ops_[i].name + "' (" + ops_[i].type + "): input '" + a.name +
                      "' names a missing op '" + p + "'");
        if (seen.insert(it->second).second) {
          users[it->second].push_back(i);
          ++pending[i];
        }
      }
    }
  }
  // Kahn's algorithm with a min-heap on file position keeps the order stable.
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<std::size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    std::size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (std::size_t u : users[i])
      if (--pending[u] == 0) ready.push(u);
  }
  if (order.size() != n) {
    for (std::size_t i = 0; i < n; ++i)
      if (pending[i] != 0)
        throw Error("op '" + ops_[i].name + "' (" + ops_[i].type + ") is part of a cycle");
  }
  return order;
}

std::vector<const Op*> Graph::inputs() const {
  std::vector<const Op*> out;
  for (const auto& o : ops_)
    if (o.type == "data" || o.type == "data-fix") out.push_back(&o);
  return out;
}

std::vector<const Op*> Graph::outputs() const {
  std::unordered_set<std::string_view> consumed;
  for (const auto& o : ops_)
    for (const auto& a : o.args)
      for (const auto& p : a.producers) consumed.insert(p);
  std::vector<const Op*> out;
  for (const auto& o : ops_)
    if (!consumed.count(o.name) && o.type != "const" && o.type != "const-fix") out.push_back(&o);
  return out;
}

bool Graph::operator==(const Graph& other) const {
  return name_ == other.name_ && ops_ == other.ops_ && attrs_ == other.attrs_ &&
         root_ == other.root_ && op_defs_ == other.op_defs_;
}

bool is_compiled(const Graph& graph) {
  if (graph.root() && !graph.root()->children.empty()) return true;
  for (const auto& o : graph.ops()) {
    const auto& t = o.type;
    if (t.size() > 4 && t.compare(t.size() - 4, 4, "-fix") == 0) return true;
  }
  return false;
}

bool is_layout_op(std::string_view type) {
  return type == "reshape" || type == "flatten" || type == "transpose" || type == "squeeze" ||
         type == "identity" || type == "reshape-fix";
}

std::optional<int> fix_point_of(const Graph& graph, std::string_view op_name) {
  const Op* o = graph.find(op_name);
  for (int hops = 0; o != nullptr && hops < 64; ++hops) {
    if (o->type == "fix") {
      if (const auto* fp = find_attr<std::int32_t>(o->attrs, "fix_point")) return *fp;
      return static_cast<int>(int_attr(o->attrs, "fix_point", 0));
    }
    auto it = o->output.attrs.find("fix_point");
    if (it != o->output.attrs.end())
      return static_cast<int>(int_attr(o->output.attrs, "fix_point", 0));
    if (!is_layout_op(o->type)) return std::nullopt;
    const auto& in = o->producers("input");
    if (in.empty()) return std::nullopt;
    o = graph.find(in.front());
  }
  return std::nullopt;
}

std::vector<float> const_values(const Op& op) {
  const auto& data = get_attr<Bytes>(op.attrs, "data", "const '" + op.name + "'").data;
  if (data.size() % sizeof(float) != 0)
    throw Error("const '" + op.name + "': data is " + std::to_string(data.size()) +
                " bytes, not a whole number of float32 values");
  std::vector<float> values(data.size() / sizeof(float));
  if (!values.empty()) std::memcpy(values.data(), data.data(), data.size());
  return values;
}

void set_const_values(Op& op, const std::vector<float>& values) {
  Bytes bytes;
  bytes.data.resize(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data.data(), values.data(), bytes.data.size());
  op.attrs["data"] = std::move(bytes);
}

namespace {
constexpr const char* kWeightsOmitted = "dpushard_weights_omitted";
}  // namespace

bool weights_omitted(const Graph& graph) {
  return bool_attr(graph.attrs(), kWeightsOmitted, false);
}

void mark_weights_omitted(Graph& graph) { graph.attrs()[kWeightsOmitted] = true; }

void require_weights(const Graph& graph, std::string_view who) {
  if (weights_omitted(graph))
    throw Error(std::string(who) + ": model '" + graph.name() +
                "' was written without weights (zoo --no-weights): it can be split, predicted "
                "and inspected, not run");
}

}  // namespace dpushard
