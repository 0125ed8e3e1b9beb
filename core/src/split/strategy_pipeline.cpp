// Pipeline stages: contiguous runs of a topological order of the units, cut wherever the
// balance is best whatever set of tensors is live there (pipeline_cuts.hpp), over the file
// order and the earliest-start order; the better prediction for the objective wins.
#include <algorithm>

#include "extract.hpp"
#include "fork_join.hpp"
#include "pipeline_cuts.hpp"
#include "strategies.hpp"

namespace dpushard::split {
namespace {

std::string thousands(std::int64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Stages ending at `ends` (positions in the sequence, the last one its end).
// Stage s runs on node slots[s] (slots as in node_slots; empty: node s).
Partition stages_of(const UnitGraph& graph, const StageCosts& costs,
                    const std::vector<std::size_t>& ends, const std::string& order_name,
                    const std::vector<int>& slots = {}) {
  const auto& seq = costs.sequence();
  const auto& ops = graph.graph().ops();
  Partition p;
  p.strategy = "pipeline";
  std::size_t begin = 0;
  for (std::size_t s = 0; s < ends.size(); ++s) {
    FragmentPart part;
    part.name = "stage" + std::to_string(s);
    part.role = "stage";
    part.nodes = {s < slots.size() ? slots[s] : static_cast<int>(s)};
    for (std::size_t i = begin; i <= ends[s]; ++i) part.units.push_back(seq[i]);
    begin = ends[s] + 1;
    p.fragments.push_back(std::move(part));
  }
  p.structure = std::to_string(ends.size()) + " stages over " + std::to_string(seq.size()) +
                " units in " + order_name + " order";
  for (std::size_t s = 0; s + 1 < ends.size(); ++s) {
    const auto crossing = costs.crossing(ends[s]);
    std::int64_t bytes = 0;
    for (std::size_t fix : crossing) bytes += ops[fix].output.element_count();
    p.structure += std::string(s == 0 ? "; " : ", ") + "cut " + std::to_string(s + 1) + " after '" +
                   unit_name(graph, seq[ends[s]]) + "' crosses " + std::to_string(crossing.size()) +
                   (crossing.size() == 1 ? " tensor (" : " tensors (") + thousands(bytes) +
                   " bytes)";
  }
  return p;
}

// The prediction the planner will make of `p`: on the extracted fragments (without their
// weights) for a cost model that prices whole fragments (subgraph launches, host work),
// else on the units.
PlanPrediction predicted(const StrategyInput& in, const Partition& p) {
  if (!in.cost.prices_fragments())
    return estimate(in.graph, p, in.cost, in.output_fix, nullptr, in.node_models()).predicted;
  const Extraction ex = extract(in.graph, p, in.output_fix, Weights::LeftOut);
  const FragmentPrices prices = price_fragments(ex, p, in.cost, in.node_models());
  return estimate(in.graph, p, in.cost, in.output_fix, &prices, in.node_models()).predicted;
}

// The orders of the nodes whose slots a pipeline's stages fill: the nodes as listed and,
// with boards of different capacity (speed x DPU cores), fastest first and slowest first.
std::vector<std::vector<int>> node_orders(const StrategyInput& in) {
  std::vector<int> listed(static_cast<std::size_t>(in.nodes));
  for (int n = 0; n < in.nodes; ++n) listed[static_cast<std::size_t>(n)] = n;
  std::vector<std::vector<int>> orders = {listed};
  auto capacity = [&](int n) { return in.speed_of(n) * in.cores_of(n); };
  std::vector<int> fast = listed;
  std::stable_sort(fast.begin(), fast.end(),
                   [&](int a, int b) { return capacity(a) > capacity(b); });
  std::vector<int> slow = listed;
  std::stable_sort(slow.begin(), slow.end(),
                   [&](int a, int b) { return capacity(a) < capacity(b); });
  for (const auto& o : {fast, slow})
    if (std::find(orders.begin(), orders.end(), o) == orders.end()) orders.push_back(o);
  return orders;
}

// 1 / speed of each slot's node.
std::vector<double> slot_scale(const StrategyInput& in, const std::vector<int>& slots) {
  std::vector<double> scale;
  for (int n : slots) scale.push_back(1.0 / in.speed_of(n));
  return scale;
}

}  // namespace

std::vector<int> node_slots(const StrategyInput& in, const std::vector<int>& order) {
  std::vector<int> slots;
  for (int n : order)
    for (int c = 0; c < std::max(1, in.cores_of(n)); ++c) slots.push_back(n);
  return slots;
}

std::size_t pipeline_cut_for(const UnitGraph& graph, const std::string& op_name,
                             std::vector<PlanAdjustment>& adjustments) {
  const Graph& g = graph.graph();
  if (g.find(op_name) == nullptr) throw Error("split: --cuts: no op named '" + op_name + "'");
  const std::size_t op = op_index(g, op_name);
  const Op& o = g.ops()[op];
  if (graph.classes().constant[op])
    throw Error("split: --cuts: '" + op_name + "' is a constant, not a cut point");
  const auto seq = owned_units(graph, graph.order());
  if (seq.size() < 2)
    throw Error(
        "split: --cuts: refused: the model is a single unit (one chain of ops closed by "
        "a fix), so it cannot be pipelined");
  const auto unit = graph.unit_of(op);
  if (!unit || graph.unit(*unit).is_input)
    throw Error("split: --cuts: '" + op_name + "' (" + o.type +
                ") is a model input or free layout op");
  std::size_t at = 0;
  for (std::size_t i = 0; i < seq.size(); ++i)
    if (seq[i] == *unit) at = i;
  // A cut follows a whole unit and leaves at least one unit after it.
  const std::size_t cut = std::min(at, seq.size() - 2);
  const std::string& to = unit_name(graph, seq[cut]);
  if (cut == at && to == op_name) return cut;
  std::string why;
  if (cut != at) {
    why = "'" + op_name + "' is in the model's last unit: nothing would follow the cut";
  } else if (o.type != "fix") {
    why = "'" + op_name + "' (" + o.type + ") is not produced by a fix: its value is a float " +
          "inside the chain that ends at '" + to + "', and a fragment ending there sends its " +
          "trailing ops to the CPU (oracle rule output_not_fixed, " +
          graph.oracle().boundary_source("output_not_fixed") + ")";
  } else {
    why = "'" + op_name + "' is inside the unit that ends at '" + to +
          "': a float value read across it keeps them together";
  }
  adjustments.push_back({"moved_cut", op_name, to, why + "; cut moved to '" + to + "'"});
  return cut;
}

namespace {

// The stages at the requested cuts (in.cuts), in the file order over the nodes as listed.
Partition requested_stages(const StrategyInput& in, const StageCosts& file_order,
                           const std::vector<int>& listed) {
  std::vector<std::size_t> ends = in.cuts;
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  const auto slots = node_slots(in, listed);
  if (ends.size() + 1 > slots.size())
    throw Error("split: --cuts: " + std::to_string(ends.size()) + " cuts make " +
                std::to_string(ends.size() + 1) + " stages, more than the " +
                std::to_string(in.nodes) + " nodes" +
                (slots.size() != static_cast<std::size_t>(in.nodes)
                     ? " (" + std::to_string(slots.size()) + " DPU cores)"
                     : std::string()));
  ends.push_back(file_order.sequence().size() - 1);
  return stages_of(in.graph, file_order, ends, "file", slots);
}

// Balanced stages over each order of the units and of the nodes' slots; the better
// prediction for the objective, priced as the planner prices candidates, wins (the file
// order and the nodes as listed on ties: its cuts follow the model).
Partition balanced_stages(const StrategyInput& in, const StageCosts& file_order) {
  const UnitGraph& graph = in.graph;
  const StageCosts by_start(graph, in.cost, in.output_fix,
                            owned_units(graph, earliest_start_order(graph)));
  Partition p;
  bool first = true;
  PlanPrediction best;
  for (const auto& order : node_orders(in)) {
    const auto slots = node_slots(in, order);
    const auto scale = slot_scale(in, slots);
    Partition q = stages_of(graph, file_order, balance_stages(file_order, slots.size(), scale),
                            "file", slots);
    PlanPrediction pq = predicted(in, q);
    if (first || better_prediction(pq, best, in.objective)) {
      p = std::move(q);
      best = pq;
      first = false;
    }
    if (by_start.sequence() != file_order.sequence()) {
      Partition r = stages_of(graph, by_start, balance_stages(by_start, slots.size(), scale),
                              "earliest-start", slots);
      const PlanPrediction pr = predicted(in, r);
      if (better_prediction(pr, best, in.objective)) {
        p = std::move(r);
        best = pr;
      }
    }
  }
  return p;
}

// Fewer stages than node slots: says why the nodes beyond them stay idle.
void note_fewer_stages(const StrategyInput& in, std::size_t units, Partition& p) {
  std::size_t slot_count = 0;
  for (int n = 0; n < in.nodes; ++n)
    slot_count += static_cast<std::size_t>(std::max(1, in.cores_of(n)));
  if (p.fragments.size() >= slot_count) return;
  const bool all_units = p.fragments.size() == units;
  p.adjustments.push_back(
      {"fewer_stages", "", "",
       "only " + std::to_string(p.fragments.size()) + " stages: " +
           (all_units ? std::string("one unit each")
                      : std::string("another stage would slow the pipeline (its transfers "
                                    "take longer than the compute it takes over)")) +
           "; nodes beyond them stay idle"});
}

std::vector<Proposal> propose_pipeline(const StrategyInput& in) {
  const UnitGraph& graph = in.graph;
  if (in.nodes < 2) return one_proposal(std::nullopt, "one node");
  const StageCosts file_order(graph, in.cost, in.output_fix, owned_units(graph, graph.order()));
  if (file_order.sequence().size() < 2)
    return one_proposal(
        std::nullopt,
        "the model is a single unit (one chain of ops closed by a fix): nothing to cut");
  Partition p = in.cuts.empty() ? balanced_stages(in, file_order)
                                : requested_stages(in, file_order, node_orders(in).front());
  note_fewer_stages(in, file_order.sequence().size(), p);
  return one_proposal(std::move(p));
}

}  // namespace

StrategyPlanner strategy_pipeline() { return {"pipeline", &propose_pipeline}; }

}  // namespace dpushard::split
