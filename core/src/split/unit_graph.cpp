#include "unit_graph.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>

#include "dpushard/graph/cost.hpp"

namespace dpushard::split {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

class DisjointSets {
 public:
  explicit DisjointSets(std::size_t n) : parent_(n) {
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
  }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<std::size_t> parent_;
};

void insert_sorted(std::vector<std::size_t>& v, std::size_t x) {
  auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it == v.end() || *it != x) v.insert(it, x);
}

}  // namespace

std::vector<std::size_t> fixed_sources(const Graph& graph, const OpClasses& classes,
                                       std::size_t op) {
  std::vector<std::size_t> out;
  std::vector<std::size_t> stack = {op};
  std::vector<std::size_t> seen;
  while (!stack.empty()) {
    const std::size_t i = stack.back();
    stack.pop_back();
    for (const auto& p : graph.ops()[i].all_producers()) {
      const std::size_t j = op_index(graph, p);
      if (classes.constant[j]) continue;
      if (classes.free_layout[j]) {
        if (std::find(seen.begin(), seen.end(), j) == seen.end()) {
          seen.push_back(j);
          stack.push_back(j);
        }
      } else if (classes.activation_fix[j]) {
        insert_sorted(out, j);
      }
    }
  }
  return out;
}

UnitGraph::UnitGraph(const Graph& graph, const Oracle& oracle, const CostModel& cost)
    : graph_(graph), oracle_(oracle), cost_(cost), classes_(classify_ops(graph)) {
  build_units();
  merge_cycles();
  link_units();
  cost_units(oracle, cost);
}

// Units: union of every op with the float (non-fix) ops feeding it.
void UnitGraph::build_units() {
  const auto& ops = graph_.ops();
  const std::size_t n = ops.size();
  DisjointSets sets(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (classes_.constant[i] || classes_.free_layout[i]) continue;
    for (const auto& p : ops[i].all_producers()) {
      const std::size_t j = op_index(graph_, p);
      if (classes_.constant[j] || classes_.free_layout[j] || classes_.activation_fix[j]) continue;
      sets.unite(i, j);
    }
  }
  std::vector<std::size_t> id_of_root(n, kNone);
  unit_of_.assign(n, std::nullopt);
  units_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (classes_.constant[i] || classes_.free_layout[i]) continue;
    const std::size_t root = sets.find(i);
    if (id_of_root[root] == kNone) {
      id_of_root[root] = units_.size();
      units_.emplace_back();
    }
    unit_of_[i] = id_of_root[root];
    units_[id_of_root[root]].ops.push_back(i);
  }
}

// Contracting float edges can close a cycle between units (a float value read both
// directly and through a fixed detour); such units must stay together, so merge every
// strongly connected component until the unit graph is acyclic.
void UnitGraph::merge_cycles() {
  for (;;) {
    const std::size_t m = units_.size();
    std::vector<std::vector<UnitId>> succ(m);
    for (UnitId u = 0; u < m; ++u)
      for (std::size_t op : units_[u].ops)
        for (std::size_t src : fixed_sources(graph_, classes_, op)) {
          const UnitId v = *unit_of_[src];
          if (v != u) insert_sorted(succ[v], u);
        }
    // Tarjan's algorithm, iterative.
    std::vector<std::size_t> index(m, kNone), low(m, 0), comp(m, kNone);
    std::vector<bool> on_stack(m, false);
    std::vector<UnitId> stack;
    std::size_t next = 0, comps = 0;
    bool merged = false;
    for (UnitId root = 0; root < m; ++root) {
      if (index[root] != kNone) continue;
      std::vector<std::pair<UnitId, std::size_t>> work = {{root, 0}};
      while (!work.empty()) {
        auto& [v, k] = work.back();
        if (k == 0) {
          index[v] = low[v] = next++;
          stack.push_back(v);
          on_stack[v] = true;
        }
        if (k < succ[v].size()) {
          const UnitId w = succ[v][k++];
          if (index[w] == kNone) {
            work.emplace_back(w, 0);
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        if (low[v] == index[v]) {
          std::size_t size = 0;
          for (;;) {
            const UnitId w = stack.back();
            stack.pop_back();
            on_stack[w] = false;
            comp[w] = comps;
            ++size;
            if (w == v) break;
          }
          if (size > 1) merged = true;
          ++comps;
        }
        const UnitId done = v;
        work.pop_back();
        if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
      }
    }
    if (!merged) return;
    std::vector<Unit> merged_units(comps);
    for (UnitId u = 0; u < m; ++u)
      for (std::size_t op : units_[u].ops) merged_units[comp[u]].ops.push_back(op);
    units_.clear();
    for (auto& unit : merged_units) {
      std::sort(unit.ops.begin(), unit.ops.end());
      units_.push_back(std::move(unit));
    }
    std::sort(units_.begin(), units_.end(),
              [](const Unit& a, const Unit& b) { return a.ops.front() < b.ops.front(); });
    for (UnitId u = 0; u < units_.size(); ++u)
      for (std::size_t op : units_[u].ops) unit_of_[op] = u;
  }
}

void UnitGraph::link_units() {
  const auto& ops = graph_.ops();
  const std::size_t m = units_.size();
  tensor_index_.assign(ops.size(), kNone);
  reads_.assign(m, {});
  model_outputs_ = model_output_indices(graph_, classes_);

  auto tensor_slot = [&](std::size_t fix) -> CrossTensor& {
    if (tensor_index_[fix] == kNone) {
      tensor_index_[fix] = tensors_.size();
      tensors_.push_back({fix, *unit_of_[fix], {}, false});
    }
    return tensors_[tensor_index_[fix]];
  };

  for (UnitId u = 0; u < m; ++u) {
    Unit& unit = units_[u];
    std::vector<std::size_t> reads;
    for (std::size_t op : unit.ops)
      for (std::size_t src : fixed_sources(graph_, classes_, op))
        if (*unit_of_[src] != u) insert_sorted(reads, src);
    reads_[u] = reads;
    for (std::size_t src : reads) {
      const UnitId v = *unit_of_[src];
      insert_sorted(unit.preds, v);
      insert_sorted(units_[v].succs, u);
      insert_sorted(tensor_slot(src).readers, u);
    }
    // A model input: one data op and only the fix ops quantizing it.
    bool has_data = false, only_fixes = true;
    for (std::size_t op : unit.ops) {
      if (ops[op].type == "data") {
        has_data = true;
      } else if (ops[op].type != "fix" || ops[op].producers("input").size() != 1 ||
                 graph_.op(ops[op].producers("input").front()).type != "data") {
        only_fixes = false;
      }
    }
    unit.is_input = has_data && only_fixes && unit.ops.size() > 1;
  }
  // A model output that is a free layout op's source, or an op itself.
  for (std::size_t out : model_outputs_) {
    if (classes_.activation_fix[out]) tensor_slot(out).model_output = true;
  }

  // Topological order of units: Kahn's algorithm, ties broken by file order.
  std::vector<std::size_t> pending(m);
  std::priority_queue<std::pair<std::size_t, UnitId>, std::vector<std::pair<std::size_t, UnitId>>,
                      std::greater<>>
      ready;
  for (UnitId u = 0; u < m; ++u) {
    pending[u] = units_[u].preds.size();
    if (pending[u] == 0) ready.emplace(units_[u].ops.front(), u);
  }
  order_.clear();
  while (!ready.empty()) {
    const UnitId u = ready.top().second;
    ready.pop();
    order_.push_back(u);
    for (UnitId v : units_[u].succs)
      if (--pending[v] == 0) ready.emplace(units_[v].ops.front(), v);
  }
  position_.assign(m, 0);
  for (std::size_t i = 0; i < order_.size(); ++i) position_[order_[i]] = i;
}

void UnitGraph::cost_units(const Oracle& oracle, const CostModel& cost) {
  const auto& ops = graph_.ops();
  op_seconds_.assign(ops.size(), 0.0);
  total_seconds_ = 0;
  for (Unit& unit : units_) {
    for (std::size_t i : unit.ops) {
      const Op& op = ops[i];
      const OpCost c = op_cost(graph_, op);
      unit.macs += c.macs;
      unit.params += c.params;
      unit.weight_bytes += c.weight_bytes;
      if (!is_placeable(op, false)) continue;
      op_seconds_[i] = cost.op_seconds(graph_, op, oracle.place(graph_, op).device);
      unit.seconds += op_seconds_[i];
    }
    total_seconds_ += unit.seconds;
  }
}

const CrossTensor* UnitGraph::tensor(std::size_t fix) const {
  if (fix >= tensor_index_.size() || tensor_index_[fix] == kNone) return nullptr;
  return &tensors_[tensor_index_[fix]];
}

bool UnitGraph::naive_candidate(std::size_t fix) const {
  const auto& ops = graph_.ops();
  if (!classes_.activation_fix[fix]) return false;
  const auto& in = ops[fix].producers("input");
  if (in.size() != 1) return false;
  const std::size_t p = op_index(graph_, in.front());
  if (classes_.constant[p] || classes_.free_layout[p] || classes_.activation_fix[p]) return false;
  if (ops[p].type == "data") return false;
  if (graph_.consumers(ops[p].name).size() != 1) return false;
  // Readers of the fix inside its own unit would keep it there.
  for (const Op* c : graph_.consumers(ops[fix].name)) {
    const std::size_t ci = static_cast<std::size_t>(c - ops.data());
    if (unit_of_[ci] && *unit_of_[ci] == *unit_of_[fix]) return false;
  }
  return true;
}

double UnitGraph::naive_extra_seconds(std::size_t fix) const {
  if (!naive_candidate(fix)) return 0;
  const auto& ops = graph_.ops();
  const UnitId u = *unit_of_[fix];
  double extra = 0;
  std::vector<std::size_t> stack = {op_index(graph_, ops[fix].producers("input").front())};
  std::vector<std::size_t> seen;
  while (!stack.empty()) {
    const std::size_t i = stack.back();
    stack.pop_back();
    if (std::find(seen.begin(), seen.end(), i) != seen.end()) continue;
    seen.push_back(i);
    const Op& op = ops[i];
    if (is_placeable(op, false) && oracle_.place(graph_, op).device == Device::Dpu)
      extra += cost_.op_seconds(graph_, op, Device::Cpu) - op_seconds_[i];
    for (const auto& p : op.all_producers()) {
      const std::size_t j = op_index(graph_, p);
      if (unit_of_[j] && *unit_of_[j] == u && !classes_.activation_fix[j]) stack.push_back(j);
    }
  }
  return extra;
}

}  // namespace dpushard::split
