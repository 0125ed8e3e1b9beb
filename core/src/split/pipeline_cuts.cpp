#include "pipeline_cuts.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>

namespace dpushard::split {

std::vector<UnitId> owned_units(const UnitGraph& graph, const std::vector<UnitId>& order) {
  std::vector<UnitId> seq;
  for (UnitId u : order)
    if (!graph.unit(u).is_input) seq.push_back(u);
  return seq;
}

std::vector<UnitId> earliest_start_order(const UnitGraph& graph) {
  const std::size_t m = graph.units().size();
  std::vector<double> start(m, 0);
  for (UnitId u : graph.order())
    for (UnitId s : graph.unit(u).succs)
      start[s] = std::max(start[s], start[u] + graph.unit(u).seconds);
  // Kahn's algorithm, the earliest start first, then file order.
  using Key = std::pair<double, std::size_t>;  // (start, first op)
  std::priority_queue<std::pair<Key, UnitId>, std::vector<std::pair<Key, UnitId>>, std::greater<>>
      ready;
  std::vector<std::size_t> pending(m);
  for (UnitId u = 0; u < m; ++u) {
    pending[u] = graph.unit(u).preds.size();
    if (pending[u] == 0) ready.push({{start[u], graph.unit(u).ops.front()}, u});
  }
  std::vector<UnitId> order;
  while (!ready.empty()) {
    const UnitId u = ready.top().second;
    ready.pop();
    order.push_back(u);
    for (UnitId s : graph.unit(u).succs)
      if (--pending[s] == 0) ready.push({{start[s], graph.unit(s).ops.front()}, s});
  }
  return order;
}

StageCosts::StageCosts(const UnitGraph& graph, const CostModel& cost, bool output_fix,
                       std::vector<UnitId> sequence)
    : seq_(std::move(sequence)), overhead_(cost.fragment_overhead_seconds()) {
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> pos(graph.units().size(), kNone);
  for (std::size_t i = 0; i < seq_.size(); ++i) pos[seq_[i]] = i;
  reads_at_.assign(seq_.size(), {});
  produced_at_.assign(seq_.size(), {});
  seconds_.assign(seq_.size(), 0);
  for (std::size_t i = 0; i < seq_.size(); ++i) seconds_[i] = graph.unit(seq_[i]).seconds;

  for (const CrossTensor& t : graph.tensors()) {
    TensorInfo info;
    info.fix = t.fix;
    info.from_model = graph.unit(t.producer).is_input || pos.at(t.producer) == kNone;
    info.producer = info.from_model ? 0 : pos.at(t.producer);
    info.model_output = t.model_output;
    info.first_reader = kNone;
    bool read_inside = false;
    for (UnitId r : t.readers) {
      if (pos.at(r) == kNone) {
        info.model_output = true;  // its reader is elsewhere: it leaves the sequence
        continue;
      }
      read_inside = true;
      info.has_readers = true;
      info.first_reader = std::min(info.first_reader, pos.at(r));
      info.last_reader = std::max(info.last_reader, pos.at(r));
    }
    info.may_be_naive = !output_fix && !info.from_model && !info.model_output && info.has_readers &&
                        graph.naive_candidate(t.fix);
    info.naive_extra = info.may_be_naive ? graph.naive_extra_seconds(t.fix) : 0.0;
    // int8 crosses even at a naive cut: the runtime fixes the float on the way out.
    info.link = cost.link_busy_seconds(graph.graph().ops()[t.fix].output.element_count());
    if (info.from_model && !read_inside) continue;  // neither made nor read here
    const std::size_t index = tensors_.size();
    tensors_.push_back(info);
    if (!info.from_model) produced_at_[info.producer].push_back(index);
    for (UnitId r : t.readers)
      if (pos.at(r) != kNone) reads_at_[pos.at(r)].push_back(index);
  }
}

std::vector<std::size_t> StageCosts::crossing(std::size_t k) const {
  std::vector<std::size_t> out;
  for (const TensorInfo& t : tensors_)
    if (!t.from_model && t.producer <= k && t.has_readers && t.last_reader > k)
      out.push_back(t.fix);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::size_t> balance_stages(const StageCosts& costs, std::size_t max_stages,
                                        const std::vector<double>& stage_scale) {
  const std::size_t n = costs.sequence().size();
  auto scale = [&](std::size_t stage) {
    return stage < stage_scale.size() ? stage_scale[stage] : 1.0;
  };
  const std::size_t stages = std::min(max_stages, n);
  if (stages < 2) return {n - 1};
  // best[s][end]: the first s stages ending at `end`, compared lexicographically: the slowest
  // stage or link (throughput), the slowest stage alone (balance when links dominate), then
  // compute plus sends (latency).
  struct Cell {
    double bottleneck = std::numeric_limits<double>::infinity();
    double slowest_stage = std::numeric_limits<double>::infinity();
    double total = std::numeric_limits<double>::infinity();
    std::size_t prev_end = 0;
  };
  constexpr double kEps = 1e-12;
  auto better = [&](const Cell& a, const Cell& b) {
    if (a.bottleneck < b.bottleneck - kEps) return true;
    if (a.bottleneck > b.bottleneck + kEps) return false;
    if (a.slowest_stage < b.slowest_stage - kEps) return true;
    if (a.slowest_stage > b.slowest_stage + kEps) return false;
    return a.total < b.total - kEps;
  };
  std::vector<std::vector<Cell>> best(stages + 1, std::vector<Cell>(n));
  costs.scan(0, [&](std::size_t end, const StageCost& c) {
    const double compute = c.compute * scale(0);
    best[1][end] = {std::max({compute, c.receive, c.send}), compute, compute + c.send, 0};
  });
  for (std::size_t s = 2; s <= stages; ++s)
    for (std::size_t begin = s - 1; begin < n; ++begin) {
      const Cell prev = best[s - 1][begin - 1];
      if (!std::isfinite(prev.bottleneck)) continue;
      const double k = scale(s - 1);
      costs.scan(begin, [&](std::size_t end, const StageCost& c) {
        const double compute = c.compute * k;
        const Cell next{std::max({prev.bottleneck, compute, c.receive, c.send}),
                        std::max(prev.slowest_stage, compute), prev.total + compute + c.send,
                        begin - 1};
        if (better(next, best[s][end])) best[s][end] = next;
      });
    }
  // As many stages as the nodes allow unless fewer have a lower bottleneck (where the
  // transfers of another cut cost more than the compute it takes over).
  double lowest = std::numeric_limits<double>::infinity();
  for (std::size_t s = 2; s <= stages; ++s) lowest = std::min(lowest, best[s][n - 1].bottleneck);
  std::size_t used = 2;
  for (std::size_t s = 2; s <= stages; ++s)
    if (best[s][n - 1].bottleneck <= lowest + kEps) used = s;
  std::vector<std::size_t> ends = {n - 1};
  std::size_t end = n - 1;
  for (std::size_t s = used; s > 1; --s) {
    end = best[s][end].prev_end;
    ends.push_back(end);
  }
  std::reverse(ends.begin(), ends.end());
  return ends;
}

}  // namespace dpushard::split
