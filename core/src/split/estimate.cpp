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

namespace {

// Each fragment's compute per frame: its slowest node's price when priced, else its units'
// seconds plus the cost model's overhead per fragment.
std::vector<double> fragment_seconds(const UnitGraph& graph, const Partition& partition,
                                     const CostModel& cost, const FragmentPrices* prices) {
  const std::size_t nf = partition.fragments.size();
  std::vector<double> seconds;
  if (prices != nullptr) {
    if (prices->size() != nf)
      throw Error("split: internal: fragment prices do not match the partition");
    for (std::size_t f = 0; f < nf; ++f) {
      if ((*prices)[f].size() != partition.fragments[f].nodes.size())
        throw Error("split: internal: fragment prices do not match the fragment's nodes");
      double slowest = 0;
      for (const auto& load : (*prices)[f]) slowest = std::max(slowest, load.seconds);
      seconds.push_back(slowest);  // a frame may go to its slowest replica
    }
  } else {
    seconds.assign(nf, cost.fragment_overhead_seconds());
    for (std::size_t f = 0; f < nf; ++f)
      for (UnitId u : partition.fragments[f].units) seconds[f] += graph.unit(u).seconds;
  }
  return seconds;
}

// A tensor sent per frame: from a fragment (or -1, the orchestrator) to a fragment (or -1).
struct Transfer {
  int from, to;
  std::int64_t bytes;
};

// The transfers of every crossing tensor. Unpriced, a naive cut's extra CPU time is added
// to the seconds of the fragment that ships the float value.
std::vector<Transfer> transfers_of(const UnitGraph& graph, const std::vector<int>& of,
                                   bool output_fix, bool priced,
                                   std::vector<double>& fragment_seconds) {
  std::vector<Transfer> transfers;
  for (const CrossTensor& t : graph.tensors()) {
    const std::int64_t elems = graph.graph().ops()[t.fix].output.element_count();
    const bool from_input = graph.unit(t.producer).is_input;
    const int home = from_input ? -1 : of[t.producer];
    const bool naive = !from_input && naive_boundary(graph, of, t.fix, output_fix);
    if (naive && !priced)
      fragment_seconds[static_cast<std::size_t>(home)] += graph.naive_extra_seconds(t.fix);
    std::vector<int> to;
    for (UnitId r : t.readers)
      if (of[r] != home && std::find(to.begin(), to.end(), of[r]) == to.end()) to.push_back(of[r]);
    // int8 crosses even at a naive cut: the runtime fixes the float on the way out (__wire).
    for (int f : to) transfers.push_back({home, f, elems});
    if (t.model_output) transfers.push_back({home, -1, elems});
  }
  return transfers;
}

// Frame k runs on replica k mod R of a fragment with R nodes (net::Destination), or with
// frame shares on replica cycle[k mod the cycle's length] (replica_cycle), so the
// placement of a frame repeats with the least common multiple of the replica counts and
// the cycle: one "phase" per frame of that period.
class ReplicaPhases {
 public:
  explicit ReplicaPhases(const Partition& partition)
      : partition_(partition), cycle_(replica_cycle(partition.frame_share)) {
    period_ = std::max<std::size_t>(1, cycle_.size());
    for (const auto& part : partition.fragments) {
      if (!cycle_.empty() && part.nodes.size() > 1 &&
          part.nodes.size() != partition.frame_share.size())
        throw Error("split: internal: frame shares do not match fragment '" + part.name + "'");
      period_ = std::lcm(period_, part.nodes.size());
      if (period_ > kMaxPhases) throw Error("split: internal: too many replica phases to estimate");
    }
  }
  std::size_t period() const { return period_; }
  std::size_t replica_at(std::size_t f, std::size_t phase) const {
    const std::size_t k = partition_.fragments[f].nodes.size();
    if (k == 1) return 0;
    return cycle_.empty() ? phase % k : cycle_[phase % cycle_.size()];
  }
  // The fraction of the frames fragment f's i-th node runs.
  double share_of(std::size_t f, std::size_t i) const {
    const std::size_t k = partition_.fragments[f].nodes.size();
    if (cycle_.empty() || k == 1) return 1.0 / static_cast<double>(k);
    return static_cast<double>(partition_.frame_share[i]) / static_cast<double>(cycle_.size());
  }
  int node_of(int f, std::size_t phase) const {
    const auto fi = static_cast<std::size_t>(f);
    return partition_.fragments[fi].nodes[replica_at(fi, phase)];
  }

 private:
  const Partition& partition_;
  std::vector<std::uint32_t> cycle_;
  std::size_t period_ = 1;
};

// What fragment f costs on its i-th node: its price there, or its seconds on the node's
// board (without a split over engines, all of it DPU time).
struct FragmentTimes {
  const Partition& partition;
  const FragmentPrices* prices;  // nullptr: unpriced
  const std::vector<double>& fragment_seconds;
  const NodeModels* boards;  // nullptr: every node is the cost model's board

  double seconds_on(std::size_t f, std::size_t i) const {
    if (prices != nullptr) return (*prices)[f][i].seconds;
    const int node = partition.fragments[f].nodes[i];
    return fragment_seconds[f] / (boards != nullptr ? boards->speed_of(node) : 1.0);
  }
  CostModel::FragmentLoad load_on(std::size_t f, std::size_t i) const {
    return prices != nullptr ? (*prices)[f][i]
                             : CostModel::FragmentLoad{seconds_on(f, i), seconds_on(f, i), 0, 0};
  }
};

// Latency: fragments in plan order, each node runs one fragment at a time; the slowest
// phase (replicas of one fragment are alike, but may sit beside different others).
double latency_seconds(const CostModel& cost, const std::vector<Transfer>& transfers,
                       const ReplicaPhases& phases, const FragmentTimes& times) {
  const std::size_t nf = times.partition.fragments.size();
  std::vector<double> finish(nf, 0);
  double latency = 0;
  for (std::size_t phase = 0; phase < phases.period(); ++phase) {
    std::map<int, double> node_free;
    for (std::size_t f = 0; f < nf; ++f) {
      double ready = 0;
      for (const auto& tr : transfers) {
        if (tr.to != static_cast<int>(f)) continue;
        if (tr.from < 0) {
          ready = std::max(ready, cost.transfer_seconds(tr.bytes));
        } else {
          const bool remote =
              phases.node_of(tr.from, phase) != phases.node_of(static_cast<int>(f), phase);
          ready = std::max(ready, finish[static_cast<std::size_t>(tr.from)] +
                                      (remote ? cost.transfer_seconds(tr.bytes) : 0.0));
        }
      }
      const int node = phases.node_of(static_cast<int>(f), phase);
      const double start = std::max(ready, node_free[node]);
      finish[f] = start + times.seconds_on(f, phases.replica_at(f, phase));
      node_free[node] = finish[f];
    }
    for (const auto& tr : transfers)
      if (tr.to == -1 && tr.from >= 0)
        latency = std::max(
            latency, finish[static_cast<std::size_t>(tr.from)] + cost.transfer_seconds(tr.bytes));
  }
  return latency;
}

// Per-frame busy time of every node's engines, by node. A node's fragments each run their
// frames one after the other, and share its DPU cores, its A53 cores and its network
// thread: its time per frame is the busiest of these (without a split over engines, all of
// a fragment is DPU time). A fragment replicated on k nodes gives each 1/k of the frames,
// or its frame share.
struct NodeEngines {
  std::map<int, double> busy, dpu, host, net;
  std::map<int, int> fragments_on;
};

NodeEngines engine_sums(const ReplicaPhases& phases, const FragmentTimes& times,
                        const CostModel& cost) {
  NodeEngines e;
  const auto& fragments = times.partition.fragments;
  for (std::size_t f = 0; f < fragments.size(); ++f) {
    const auto& fnodes = fragments[f].nodes;
    for (std::size_t i = 0; i < fnodes.size(); ++i) {
      const int n = fnodes[i];
      const double share = phases.share_of(f, i);
      const CostModel::FragmentLoad load = times.load_on(f, i);
      ++e.fragments_on[n];
      e.busy[n] = std::max(e.busy[n], load.seconds * share);
      e.dpu[n] += load.dpu_seconds * share;
      e.host[n] += load.host_seconds * share;
      e.net[n] += load.net_seconds * share;
    }
  }
  for (auto& [n, v] : e.busy) {
    const CostModel& board = times.boards != nullptr ? times.boards->at(n, cost) : cost;
    v = std::max({v, e.dpu[n] / board.dpu_cores(), e.host[n] / board.host_cores(), e.net[n]});
  }
  return e;
}

// The engines serve whole jobs, first come first served, and the node's other fragments
// send theirs when their own frames arrive, not in the gaps a fragment leaves: in each of
// its frames a fragment can find one job of each other fragment of its node ahead of it
// on the DPU (where they outnumber its cores) and on the network thread. Its frames then
// take their own DPU and A53 time plus the others' DPU time (or their own and the others'
// TCP time). The engines' sums alone assume perfect interleaving, which the sim workers
// never reached: the 3-node CNN experts plans ran 6-21 % under them, and within 5 % of this.
void add_queueing(NodeEngines& e, const ReplicaPhases& phases, const FragmentTimes& times,
                  const CostModel& cost) {
  const auto& fragments = times.partition.fragments;
  for (std::size_t f = 0; f < fragments.size(); ++f) {
    const auto& fnodes = fragments[f].nodes;
    for (std::size_t i = 0; i < fnodes.size(); ++i) {
      const int n = fnodes[i];
      const CostModel& board = times.boards != nullptr ? times.boards->at(n, cost) : cost;
      const double share = phases.share_of(f, i);
      const CostModel::FragmentLoad own = times.load_on(f, i);
      // With as many DPU cores as the node has fragments, each finds a core of its own.
      const bool dpu_shared = e.fragments_on[n] > board.dpu_cores();
      const double others_dpu = dpu_shared ? e.dpu[n] - own.dpu_seconds * share : 0.0;
      const double others_net = e.net[n] - own.net_seconds * share;
      const double chain =
          std::max((own.dpu_seconds + own.host_seconds) * share + others_dpu / board.dpu_cores(),
                   own.net_seconds * share + others_net);
      e.busy[n] = std::max(e.busy[n], chain);
    }
  }
}

NodeEngines busy_engines(const ReplicaPhases& phases, const FragmentTimes& times,
                         const CostModel& cost) {
  NodeEngines e = engine_sums(phases, times, cost);
  add_queueing(e, phases, times, cost);
  return e;
}

// Per-frame busy time of the links: every node's and the orchestrator's, each way.
struct LinkLoads {
  std::map<int, double> tx, rx;
  double orch_tx = 0, orch_rx = 0;
  std::int64_t io = 0;    // bytes to and from the orchestrator per frame
  double wire_share = 0;  // bytes between nodes per frame
};

LinkLoads link_loads(const std::vector<Transfer>& transfers, const Partition& partition,
                     const ReplicaPhases& phases, const CostModel& cost) {
  LinkLoads l;
  for (const auto& tr : transfers) {
    const double t = cost.link_busy_seconds(tr.bytes);
    if (tr.from < 0 || tr.to < 0) {
      l.io += tr.bytes;
      const auto frag = static_cast<std::size_t>(tr.from < 0 ? tr.to : tr.from);
      const auto& nodes = partition.fragments[frag].nodes;
      (tr.from < 0 ? l.orch_tx : l.orch_rx) += t;
      for (std::size_t i = 0; i < nodes.size(); ++i)
        (tr.from < 0 ? l.rx : l.tx)[nodes[i]] += t * phases.share_of(frag, i);
      continue;
    }
    // Between fragments: each phase's pair of nodes carries 1/period of the frames.
    const double share = 1.0 / static_cast<double>(phases.period());
    for (std::size_t phase = 0; phase < phases.period(); ++phase) {
      const int from = phases.node_of(tr.from, phase), to = phases.node_of(tr.to, phase);
      if (from == to) continue;
      l.wire_share += static_cast<double>(tr.bytes) * share;
      l.tx[from] += t * share;
      l.rx[to] += t * share;
    }
  }
  return l;
}

}  // namespace

PartitionEstimate estimate(const UnitGraph& graph, const Partition& partition,
                           const CostModel& cost, bool output_fix,
                           const FragmentPrices* fragment_loads, const NodeModels* boards) {
  const auto of = fragment_of_units(graph, partition);
  if (boards != nullptr && boards->empty()) boards = nullptr;
  const bool priced = fragment_loads != nullptr;
  PartitionEstimate est;
  est.fragment_seconds = fragment_seconds(graph, partition, cost, fragment_loads);
  const auto transfers = transfers_of(graph, of, output_fix, priced, est.fragment_seconds);
  const ReplicaPhases phases(partition);
  const FragmentTimes times{partition, fragment_loads, est.fragment_seconds, boards};

  const double latency = latency_seconds(cost, transfers, phases, times);
  // Throughput: the busiest of every node's engines and links and the orchestrator's.
  const NodeEngines engines = busy_engines(phases, times, cost);
  const LinkLoads links = link_loads(transfers, partition, phases, cost);
  double bottleneck = std::max(links.orch_tx, links.orch_rx);
  for (const auto* m : {&engines.busy, &links.tx, &links.rx})
    for (const auto& [n, v] : *m) bottleneck = std::max(bottleneck, v);
  est.predicted.latency_ms = latency * 1e3;
  est.predicted.throughput_fps = bottleneck > 0 ? 1.0 / bottleneck : 0.0;
  est.predicted.wire_bytes_per_frame = std::llround(links.wire_share);
  est.predicted.io_bytes_per_frame = links.io;
  return est;
}

}  // namespace dpushard::split
