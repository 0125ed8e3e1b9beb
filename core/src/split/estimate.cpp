// Unit-level prediction of a partition: list scheduling for latency, the busiest resource
// (node compute, node or orchestrator link) for throughput.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "extract.hpp"
#include "partition.hpp"

namespace dpushard::split {
namespace {
// Replica counts whose least common multiple exceeds this are refused (plans use one count).
constexpr std::size_t kMaxPhases = 1 << 12;
}  // namespace

std::vector<int> fragment_of_units(const UnitGraph& graph, const Partition& partition) {
  std::vector<int> of(graph.units().size(), -1);
  for (std::size_t f = 0; f < partition.fragments.size(); ++f)
    for (UnitId u : partition.fragments[f].units) {
      if (of[u] != -1) throw Error("split: internal: unit assigned to two fragments");
      of[u] = static_cast<int>(f);
    }
  for (UnitId u = 0; u < graph.units().size(); ++u)
    if (of[u] == -1 && !graph.unit(u).is_input)
      throw Error("split: internal: op '" + graph.graph().ops()[graph.unit(u).ops.front()].name +
                  "' is in no fragment");
  return of;
}

bool naive_boundary(const UnitGraph& graph, const std::vector<int>& fragment_of_unit,
                    std::size_t fix, bool output_fix) {
  if (output_fix) return false;
  const CrossTensor* t = graph.tensor(fix);
  if (t == nullptr || t->model_output || graph.unit(t->producer).is_input) return false;
  if (!graph.naive_candidate(fix)) return false;
  const int home = fragment_of_unit[t->producer];
  bool leaves = false;
  for (UnitId r : t->readers) {
    if (fragment_of_unit[r] == home) return false;  // read at home: the fix stays
    leaves = true;
  }
  return leaves;
}

bool better_prediction(const PlanPrediction& a, const PlanPrediction& b, Objective objective) {
  constexpr double kEps = 1e-9;
  const double la = a.latency_ms, lb = b.latency_ms;
  const double ta = a.throughput_fps, tb = b.throughput_fps;
  if (objective == Objective::Latency) {
    if (std::abs(la - lb) > kEps) return la < lb;
    if (std::abs(ta - tb) > kEps) return ta > tb;
  } else {
    if (std::abs(ta - tb) > kEps) return ta > tb;
    if (std::abs(la - lb) > kEps) return la < lb;
  }
  return a.wire_bytes_per_frame < b.wire_bytes_per_frame;
}

Partition whole_model(const UnitGraph& graph, const std::string& strategy, std::vector<int> nodes) {
  Partition p;
  p.strategy = strategy;
  FragmentPart part;
  part.name = "whole";
  part.role = "model";
  part.nodes = std::move(nodes);
  for (UnitId u : graph.order())
    if (!graph.unit(u).is_input) part.units.push_back(u);
  p.fragments.push_back(std::move(part));
  return p;
}

NodeModels NodeModels::first(int k) const {
  NodeModels out;
  for (int n = 0; n < k && static_cast<std::size_t>(n) < cost.size(); ++n) {
    out.cost.push_back(cost[static_cast<std::size_t>(n)]);
    out.speed.push_back(speed_of(n));
  }
  return out;
}

FragmentPrices price_fragments(const Extraction& extraction, const Partition& partition,
                               const CostModel& cost, const NodeModels* nodes) {
  if (extraction.fragments.size() != partition.fragments.size())
    throw Error("split: internal: fragments do not match the partition");
  FragmentPrices prices;
  for (std::size_t f = 0; f < partition.fragments.size(); ++f) {
    std::map<const CostModel*, CostModel::FragmentLoad> seen;
    auto& mine = prices.emplace_back();
    for (int n : partition.fragments[f].nodes) {
      const CostModel& c = nodes != nullptr ? nodes->at(n, cost) : cost;
      auto it = seen.find(&c);
      if (it == seen.end())
        it = seen.emplace(&c, c.fragment_load(extraction.fragments[f].graph)).first;
      mine.push_back(it->second);
    }
  }
  return prices;
}

PartitionEstimate estimate(const UnitGraph& graph, const Partition& partition,
                           const CostModel& cost, bool output_fix,
                           const FragmentPrices* fragment_loads, const NodeModels* boards) {
  const auto of = fragment_of_units(graph, partition);
  const std::size_t nf = partition.fragments.size();
  if (boards != nullptr && boards->empty()) boards = nullptr;
  auto board = [&](int node) -> const CostModel& {
    return boards != nullptr ? boards->at(node, cost) : cost;
  };
  auto speed = [&](int node) { return boards != nullptr ? boards->speed_of(node) : 1.0; };
  PartitionEstimate est;
  // loads[f][i]: fragment f on partition.fragments[f].nodes[i].
  FragmentPrices loads;
  if (fragment_loads != nullptr) {
    if (fragment_loads->size() != nf)
      throw Error("split: internal: fragment prices do not match the partition");
    loads = *fragment_loads;
    for (std::size_t f = 0; f < nf; ++f) {
      if (loads[f].size() != partition.fragments[f].nodes.size())
        throw Error("split: internal: fragment prices do not match the fragment's nodes");
      double slowest = 0;
      for (const auto& load : loads[f]) slowest = std::max(slowest, load.seconds);
      est.fragment_seconds.push_back(slowest);  // a frame may go to its slowest replica
    }
  } else {
    est.fragment_seconds.assign(nf, cost.fragment_overhead_seconds());
    for (std::size_t f = 0; f < nf; ++f)
      for (UnitId u : partition.fragments[f].units)
        est.fragment_seconds[f] += graph.unit(u).seconds;
  }
  const bool priced = fragment_loads != nullptr;

  // Transfers: (from fragment or -1 for the orchestrator) -> (to fragment or -1), bytes.
  struct Transfer {
    int from, to;
    std::int64_t bytes;
  };
  std::vector<Transfer> transfers;
  for (const CrossTensor& t : graph.tensors()) {
    const std::int64_t elems = graph.graph().ops()[t.fix].output.element_count();
    const bool from_input = graph.unit(t.producer).is_input;
    const int home = from_input ? -1 : of[t.producer];
    const bool naive = !from_input && naive_boundary(graph, of, t.fix, output_fix);
    if (naive && !priced)
      est.fragment_seconds[static_cast<std::size_t>(home)] += graph.naive_extra_seconds(t.fix);
    std::vector<int> to;
    for (UnitId r : t.readers)
      if (of[r] != home && std::find(to.begin(), to.end(), of[r]) == to.end()) to.push_back(of[r]);
    // int8 crosses even at a naive cut: the runtime fixes the float on the way out (__wire).
    for (int f : to) transfers.push_back({home, f, elems});
    if (t.model_output) transfers.push_back({home, -1, elems});
  }

  // Frame k runs on replica k mod R of a fragment with R nodes (net::Destination), or with
  // frame shares on replica cycle[k mod the cycle's length] (replica_cycle), so the
  // placement of a frame repeats with the least common multiple of the replica counts and
  // the cycle: one "phase" per frame of that period.
  const std::vector<std::uint32_t> cycle = replica_cycle(partition.frame_share);
  std::size_t period = std::max<std::size_t>(1, cycle.size());
  for (const auto& part : partition.fragments) {
    if (!cycle.empty() && part.nodes.size() > 1 &&
        part.nodes.size() != partition.frame_share.size())
      throw Error("split: internal: frame shares do not match fragment '" + part.name + "'");
    period = std::lcm(period, part.nodes.size());
    if (period > kMaxPhases) throw Error("split: internal: too many replica phases to estimate");
  }
  auto replica_at = [&](std::size_t f, std::size_t phase) -> std::size_t {
    const std::size_t k = partition.fragments[f].nodes.size();
    if (k == 1) return 0;
    return cycle.empty() ? phase % k : cycle[phase % cycle.size()];
  };
  // The fraction of the frames fragment f's i-th node runs.
  auto share_of = [&](std::size_t f, std::size_t i) {
    const std::size_t k = partition.fragments[f].nodes.size();
    if (cycle.empty() || k == 1) return 1.0 / static_cast<double>(k);
    return static_cast<double>(partition.frame_share[i]) / static_cast<double>(cycle.size());
  };
  auto node_of = [&](int f, std::size_t phase) {
    const auto fi = static_cast<std::size_t>(f);
    return partition.fragments[fi].nodes[replica_at(fi, phase)];
  };

  // Fragment f's seconds per frame on its i-th node.
  auto seconds_on = [&](std::size_t f, std::size_t i) {
    if (priced) return loads[f][i].seconds;
    return est.fragment_seconds[f] / speed(partition.fragments[f].nodes[i]);
  };

  // Latency: fragments in plan order, each node runs one fragment at a time; the slowest
  // phase (replicas of one fragment are alike, but may sit beside different others).
  std::vector<double> finish(nf, 0);
  double latency = 0;
  for (std::size_t phase = 0; phase < period; ++phase) {
    std::map<int, double> node_free;
    for (std::size_t f = 0; f < nf; ++f) {
      double ready = 0;
      for (const auto& tr : transfers) {
        if (tr.to != static_cast<int>(f)) continue;
        if (tr.from < 0) {
          ready = std::max(ready, cost.transfer_seconds(tr.bytes));
        } else {
          const bool remote = node_of(tr.from, phase) != node_of(static_cast<int>(f), phase);
          ready = std::max(ready, finish[static_cast<std::size_t>(tr.from)] +
                                      (remote ? cost.transfer_seconds(tr.bytes) : 0.0));
        }
      }
      const int node = node_of(static_cast<int>(f), phase);
      const double start = std::max(ready, node_free[node]);
      finish[f] = start + seconds_on(f, replica_at(f, phase));
      node_free[node] = finish[f];
    }
    for (const auto& tr : transfers)
      if (tr.to == -1 && tr.from >= 0)
        latency = std::max(
            latency, finish[static_cast<std::size_t>(tr.from)] + cost.transfer_seconds(tr.bytes));
  }

  // Throughput: per-frame busy time of every node's engines and link, and the
  // orchestrator's. A node's fragments each run their frames one after the other, and
  // share its DPU cores, its A53 cores and its network thread: its time per frame is the
  // busiest of these (without a split over engines, all of a fragment is DPU time). A
  // fragment replicated on k nodes gives each 1/k of the frames, or its frame share.
  std::map<int, double> busy, dpu, host, net, tx, rx;
  double orch_tx = 0, orch_rx = 0;
  std::int64_t wire = 0, io = 0;
  double wire_share = 0;
  // Fragment f's load on its i-th node (without a split over engines, all of it DPU time).
  const auto load_on = [&](std::size_t f, std::size_t i) {
    return priced ? loads[f][i] : CostModel::FragmentLoad{seconds_on(f, i), seconds_on(f, i), 0, 0};
  };
  std::map<int, int> fragments_on;
  for (std::size_t f = 0; f < nf; ++f) {
    const auto& fnodes = partition.fragments[f].nodes;
    for (std::size_t i = 0; i < fnodes.size(); ++i) {
      const int n = fnodes[i];
      const double share = share_of(f, i);
      const CostModel::FragmentLoad load = load_on(f, i);
      ++fragments_on[n];
      busy[n] = std::max(busy[n], load.seconds * share);
      dpu[n] += load.dpu_seconds * share;
      host[n] += load.host_seconds * share;
      net[n] += load.net_seconds * share;
    }
  }
  for (auto& [n, v] : busy)
    v = std::max({v, dpu[n] / board(n).dpu_cores(), host[n] / board(n).host_cores(), net[n]});
  // The engines serve whole jobs, first come first served, and the node's other fragments
  // send theirs when their own frames arrive, not in the gaps a fragment leaves: in each of
  // its frames a fragment can find one job of each other fragment of its node ahead of it
  // on the DPU (where they outnumber its cores) and on the network thread. Its frames then
  // take their own DPU and A53 time plus the others' DPU time (or their own and the others'
  // TCP time). The engines' sums alone assume perfect interleaving, which the sim workers
  // never reached: the 3-node CNN experts plans ran 6-21 % under them, and within 5 % of this.
  for (std::size_t f = 0; f < nf; ++f) {
    const auto& fnodes = partition.fragments[f].nodes;
    for (std::size_t i = 0; i < fnodes.size(); ++i) {
      const int n = fnodes[i];
      const double share = share_of(f, i);
      const CostModel::FragmentLoad own = load_on(f, i);
      // With as many DPU cores as the node has fragments, each finds a core of its own.
      const bool dpu_shared = fragments_on[n] > board(n).dpu_cores();
      const double others_dpu = dpu_shared ? dpu[n] - own.dpu_seconds * share : 0.0;
      const double others_net = net[n] - own.net_seconds * share;
      const double chain =
          std::max((own.dpu_seconds + own.host_seconds) * share + others_dpu / board(n).dpu_cores(),
                   own.net_seconds * share + others_net);
      busy[n] = std::max(busy[n], chain);
    }
  }
  for (const auto& tr : transfers) {
    const double t = cost.link_busy_seconds(tr.bytes);
    if (tr.from < 0 || tr.to < 0) {
      io += tr.bytes;
      const auto frag = static_cast<std::size_t>(tr.from < 0 ? tr.to : tr.from);
      const auto& nodes = partition.fragments[frag].nodes;
      (tr.from < 0 ? orch_tx : orch_rx) += t;
      for (std::size_t i = 0; i < nodes.size(); ++i)
        (tr.from < 0 ? rx : tx)[nodes[i]] += t * share_of(frag, i);
      continue;
    }
    // Between fragments: each phase's pair of nodes carries 1/period of the frames.
    const double share = 1.0 / static_cast<double>(period);
    for (std::size_t phase = 0; phase < period; ++phase) {
      const int from = node_of(tr.from, phase), to = node_of(tr.to, phase);
      if (from == to) continue;
      wire_share += static_cast<double>(tr.bytes) * share;
      tx[from] += t * share;
      rx[to] += t * share;
    }
  }
  wire = std::llround(wire_share);
  double bottleneck = std::max(orch_tx, orch_rx);
  for (const auto* m : {&busy, &tx, &rx})
    for (const auto& [n, v] : *m) bottleneck = std::max(bottleneck, v);
  est.predicted.latency_ms = latency * 1e3;
  est.predicted.throughput_fps = bottleneck > 0 ? 1.0 / bottleneck : 0.0;
  est.predicted.wire_bytes_per_frame = wire;
  est.predicted.io_bytes_per_frame = io;
  return est;
}

}  // namespace dpushard::split
