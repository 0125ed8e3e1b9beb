// Pipeline stages: cuts where exactly one fixed tensor is live and every reader of it lies
// after the cut, chosen by dynamic programming to minimise the slowest stage or link.
#include <algorithm>
#include <cmath>
#include <limits>

#include "fork_join.hpp"
#include "strategies.hpp"

namespace dpushard::split {
namespace {

// Owned units in topological order (model inputs are fed directly, never owned).
std::vector<UnitId> owned_sequence(const UnitGraph& graph) {
  std::vector<UnitId> seq;
  for (UnitId u : graph.order())
    if (!graph.unit(u).is_input) seq.push_back(u);
  return seq;
}

struct CutPoint {
  std::size_t after;  // index into the owned sequence: the cut follows this unit
  std::size_t fix;    // the single live tensor
};

// Legal cuts and, for every position, the tensors live across it (for messages).
std::vector<CutPoint> legal_cuts(const UnitGraph& graph, const std::vector<UnitId>& seq,
                                 std::vector<std::vector<std::size_t>>* live_at = nullptr) {
  std::vector<std::size_t> pos(graph.units().size(), 0);
  for (std::size_t i = 0; i < seq.size(); ++i) pos[seq[i]] = i;
  const std::size_t n = seq.size();
  std::vector<std::vector<std::size_t>> live(n);
  std::vector<bool> read_before(n, false);  // some tensor live here is also read before
  for (const CrossTensor& t : graph.tensors()) {
    if (graph.unit(t.producer).is_input || t.readers.empty()) continue;
    const std::size_t p = pos[t.producer];
    std::size_t first = n, last = 0;
    for (UnitId r : t.readers) {
      first = std::min(first, pos[r]);
      last = std::max(last, pos[r]);
    }
    for (std::size_t k = p; k < last; ++k) {
      live[k].push_back(t.fix);
      if (first <= k) read_before[k] = true;
    }
  }
  std::vector<CutPoint> cuts;
  for (std::size_t k = 0; k + 1 < n; ++k)
    if (live[k].size() == 1 && !read_before[k]) cuts.push_back({k, live[k].front()});
  if (live_at) *live_at = std::move(live);
  return cuts;
}

}  // namespace

std::size_t pipeline_cut_for(const UnitGraph& graph, const std::string& op_name,
                             std::vector<PlanAdjustment>& adjustments) {
  const Graph& g = graph.graph();
  if (g.find(op_name) == nullptr) throw Error("split: --cuts: no op named '" + op_name + "'");
  const std::size_t op = op_index(g, op_name);
  const Op& o = g.ops()[op];
  if (graph.classes().constant[op])
    throw Error("split: --cuts: '" + op_name + "' is a constant, not a cut point");
  const auto seq = owned_sequence(graph);
  std::vector<std::vector<std::size_t>> live;
  const auto cuts = legal_cuts(graph, seq, &live);
  if (cuts.empty())
    throw Error(
        "split: --cuts: refused: the model has no point where a single fixed tensor is "
        "live, so it cannot be pipelined");
  const auto unit = graph.unit_of(op);
  if (!unit || graph.unit(*unit).is_input)
    throw Error("split: --cuts: '" + op_name + "' (" + o.type +
                ") is a model input or free layout op");
  std::size_t at = 0;
  for (std::size_t i = 0; i < seq.size(); ++i)
    if (seq[i] == *unit) at = i;
  // The nearest legal cut, downstream on ties.
  const CutPoint* best = nullptr;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const CutPoint& c : cuts) {
    const std::size_t d = c.after >= at ? c.after - at : at - c.after;
    if (d < best_distance || (d == best_distance && c.after > at)) {
      best = &c;
      best_distance = d;
    }
  }
  const std::string& to = g.ops()[best->fix].name;
  if (best->after == at && best->fix == op) return best->after;
  std::string why;
  if (o.type != "fix") {
    why = "'" + op_name + "' (" + o.type + ") is not produced by a fix: its value is a float " +
          "inside the chain that ends at '" + unit_name(graph, *unit) +
          "', and a fragment ending there sends its trailing ops to the CPU (oracle rule " +
          "output_not_fixed, " + graph.oracle().boundary_source("output_not_fixed") + ")";
  } else {
    why = "'" + op_name + "' is not the only tensor live there";
  }
  if (at < live.size() && live[at].size() > 1) {
    why += "; live there: ";
    for (std::size_t i = 0; i < live[at].size() && i < 3; ++i)
      why += (i ? ", '" : "'") + g.ops()[live[at][i]].name + "'";
    if (live[at].size() > 3) why += ", ...";
  }
  adjustments.push_back({"moved_cut", op_name, to, why + "; cut moved to '" + to + "'"});
  return best->after;
}

std::optional<Partition> plan_pipeline(const StrategyInput& in,
                                       const std::vector<std::size_t>& requested,
                                       std::string& why_not) {
  const UnitGraph& graph = in.graph;
  const auto seq = owned_sequence(graph);
  const auto cuts = legal_cuts(graph, seq);
  if (in.nodes < 2) {
    why_not = "one node";
    return std::nullopt;
  }
  if (cuts.empty()) {
    why_not = "no point where a single fixed tensor is live";
    return std::nullopt;
  }
  std::vector<double> prefix(seq.size() + 1, 0);
  for (std::size_t i = 0; i < seq.size(); ++i)
    prefix[i + 1] = prefix[i] + graph.unit(seq[i]).seconds;
  const double overhead = in.cost.fragment_overhead_seconds();
  auto cut_cost = [&](const CutPoint& c, double& naive_extra) {
    const std::int64_t elems = graph.graph().ops()[c.fix].output.element_count();
    const bool naive =
        !in.output_fix && graph.naive_candidate(c.fix) && !graph.tensor(c.fix)->model_output;
    naive_extra = naive ? graph.naive_extra_seconds(c.fix) : 0.0;
    return in.cost.link_busy_seconds(elems * (naive ? 4 : 1));
  };

  std::vector<std::size_t> chosen;
  if (!requested.empty()) {
    chosen = requested;
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    if (chosen.size() + 1 > static_cast<std::size_t>(in.nodes))
      throw Error("split: --cuts: " + std::to_string(chosen.size()) + " cuts make " +
                  std::to_string(chosen.size() + 1) + " stages, more than the " +
                  std::to_string(in.nodes) + " nodes");
  } else {
    // DP: best[s][c] = the smallest bottleneck (then latency) of the first stages ending at
    // cut c (index into cuts, or cuts.size() for the end of the model) with s stages.
    const std::size_t stages =
        std::min<std::size_t>(static_cast<std::size_t>(in.nodes), cuts.size() + 1);
    const std::size_t nc = cuts.size() + 1;
    // Lexicographic: the slowest stage or link, then the slowest stage alone (balance
    // when links dominate), then the sum (latency).
    struct Cell {
      double bottleneck = std::numeric_limits<double>::infinity();
      double slowest_stage = std::numeric_limits<double>::infinity();
      double total = std::numeric_limits<double>::infinity();
      std::size_t prev = 0;
    };
    auto end_of = [&](std::size_t c) { return c < cuts.size() ? cuts[c].after + 1 : seq.size(); };
    std::vector<std::vector<Cell>> best(stages + 1, std::vector<Cell>(nc));
    std::vector<double> transfer(cuts.size()), naive_extra(cuts.size());
    for (std::size_t c = 0; c < cuts.size(); ++c) transfer[c] = cut_cost(cuts[c], naive_extra[c]);
    for (std::size_t c = 0; c < nc; ++c) {
      const double stage = prefix[end_of(c)] + overhead + (c < cuts.size() ? naive_extra[c] : 0);
      const double link = c < cuts.size() ? transfer[c] : 0;
      best[1][c] = {std::max(stage, link), stage, stage + link, nc};
    }
    for (std::size_t s = 2; s <= stages; ++s)
      for (std::size_t c = 0; c < nc; ++c)
        for (std::size_t p = 0; p < c && p < cuts.size(); ++p) {
          const Cell& prev = best[s - 1][p];
          if (!std::isfinite(prev.bottleneck)) continue;
          const double stage = prefix[end_of(c)] - prefix[end_of(p)] + overhead +
                               (c < cuts.size() ? naive_extra[c] : 0);
          const double link = c < cuts.size() ? transfer[c] : 0;
          const Cell next{std::max({prev.bottleneck, stage, link}),
                          std::max(prev.slowest_stage, stage), prev.total + stage + link, p};
          Cell& cell = best[s][c];
          constexpr double kEps = 1e-12;
          const bool better =
              next.bottleneck < cell.bottleneck - kEps ||
              (next.bottleneck <= cell.bottleneck + kEps &&
               (next.slowest_stage < cell.slowest_stage - kEps ||
                (next.slowest_stage <= cell.slowest_stage + kEps && next.total < cell.total)));
          if (better) cell = next;
        }
    std::size_t c = nc - 1;
    for (std::size_t s = stages; s > 1; --s) {
      c = best[s][c].prev;
      chosen.push_back(cuts[c].after);
    }
    std::reverse(chosen.begin(), chosen.end());
  }

  Partition p;
  p.strategy = "pipeline";
  std::size_t begin = 0;
  std::vector<std::size_t> ends = chosen;
  ends.push_back(seq.size() - 1);
  for (std::size_t s = 0; s < ends.size(); ++s) {
    FragmentPart part;
    part.name = "stage" + std::to_string(s);
    part.role = "stage";
    part.nodes = {static_cast<int>(s)};
    for (std::size_t i = begin; i <= ends[s]; ++i) part.units.push_back(seq[i]);
    begin = ends[s] + 1;
    p.fragments.push_back(std::move(part));
  }
  p.structure = std::to_string(cuts.size()) + " legal cut points (one fixed tensor live); " +
                std::to_string(p.fragments.size()) + " stages";
  if (p.fragments.size() < static_cast<std::size_t>(in.nodes))
    p.adjustments.push_back({"fewer_stages", "", "",
                             "only " + std::to_string(p.fragments.size()) +
                                 " stages possible: nodes beyond them stay idle"});
  return p;
}

}  // namespace dpushard::split
