// Hybrid: R replicas of a model-parallel plan (one replica: the experts with pipelined
// branches, the hybrid of experts and pipeline). Fragment f of the inner plan on node n runs,
// in replica r, on node r * k + n; its node list is replica-major, so nodes[r] is replica
// r's and the runtime's routing (frame k to replica k mod R of every fragment) keeps a frame
// inside one replica.
#include "dpushard/plan/strategy_table.hpp"
#include "strategies.hpp"

namespace dpushard::split {
namespace {

constexpr const char* kHybrid = "hybrid";

// The inner plans of a hybrid of `replicas` replicas: the table's strategies whose
// inner_min_replicas is at most `replicas` (one replica: the pipelined experts), in order.
std::vector<const StrategyInfo*> inner_strategies(int replicas) {
  std::vector<const StrategyInfo*> out;
  for (const StrategyInfo& s : strategy_table())
    if (s.inner_min_replicas > 0 && s.inner_min_replicas <= replicas) out.push_back(&s);
  return out;
}

// `r` replicas of `inner`'s plan for `replica` (in.nodes / r nodes), or why not; nothing
// when it is not worth a line of its own.
std::optional<Proposal> hybrid_of(const StrategyInput& in, const StrategyInput& replica, int r,
                                  const StrategyInfo& inner) {
  const int k = replica.nodes;
  Proposal option;
  option.replicas = r;
  option.inner_strategy = inner.name;
  Proposal plan = planner_for(inner.name).propose(replica).front();
  if (plan.partition) {
    option.partition = plan_hybrid(*plan.partition, r, k);
    if (const int idle = in.nodes - r * k; idle > 0)
      option.partition->adjustments.push_back(
          {"idle_nodes", "", "",
           std::to_string(r) + " replicas of " + std::to_string(k) + " nodes on " +
               std::to_string(in.nodes) + " nodes: " + std::to_string(idle) +
               (idle == 1 ? " node stays" : " nodes stay") + " idle"});
  } else if (r > 1 && inner.inner_min_replicas == 1) {
    return std::nullopt;  // replicas too small to pipeline a branch: not worth a line
  } else {
    option.why_not =
        inner.name + " on " + std::to_string(k) + " nodes is not possible: " + plan.why_not;
    if (r == 1 && in.nodes < 4)
      option.why_not += "; replicas of a model-parallel plan need at least 4 nodes";
  }
  return option;
}

// Every hybrid (only those of R = in.replicas when it is not 0): the pipelined experts on all
// the nodes (R = 1), and for every R >= 2 replicas of k = in.nodes / R >= 2 nodes each (the
// in.nodes - R x k nodes left over stay idle) R copies of each inner plan for k nodes (chosen
// for in.objective, the pipeline's cuts its own); or why that inner plan is not possible
// (replicas of pipelined experts only where they are). Empty: one node.
std::vector<Proposal> propose_hybrids(const StrategyInput& in) {
  std::vector<Proposal> out;
  const bool uniform = in.uniform_boards();
  for (int r = 1; r <= in.nodes / 2; ++r) {
    const int k = in.nodes / r;  // nodes left over (in.nodes - r * k) stay idle
    if (in.replicas != 0 && r != in.replicas) continue;
    // R and R+1 replicas of k nodes on uniform boards run one inner plan: the same latency,
    // more frames per second and fewer idle nodes with R+1, so R is never worth planning
    // (on 1,000 nodes this leaves 62 of 500 replica counts; docs/splitting.md).
    if (in.replicas == 0 && uniform && r > 1 && in.nodes / (r + 1) == k) continue;
    StrategyInput replica = in;
    replica.nodes = k;
    replica.models = in.models.first(k);  // the inner plan is made for replica 0's boards
    replica.cuts = {};
    replica.replicas = 0;
    for (const StrategyInfo* inner : inner_strategies(r))
      if (auto option = hybrid_of(in, replica, r, *inner)) out.push_back(std::move(*option));
  }
  return out;
}

}  // namespace

Partition plan_hybrid(const Partition& inner, int replicas, int nodes_per_replica) {
  const StrategyInfo* row = find_strategy(inner.strategy);
  if (replicas < 1 || nodes_per_replica < 2 || row == nullptr || row->inner_min_replicas < 1 ||
      replicas < row->inner_min_replicas)
    throw Error(
        "split: internal: a hybrid needs >= 2 replicas of >= 2 nodes, or pipelined experts");
  Partition p;
  p.strategy = kHybrid;
  const int first_last = nodes_per_replica - 1;
  p.structure = replicas == 1
                    ? "experts with pipelined branches on " + std::to_string(nodes_per_replica) +
                          " nodes: " + inner.structure
                    : std::to_string(replicas) + " replicas of " + inner.strategy + " on " +
                          std::to_string(nodes_per_replica) + " nodes each (replica r on nodes " +
                          std::to_string(nodes_per_replica) + "r.." +
                          std::to_string(nodes_per_replica) + "r+" + std::to_string(first_last) +
                          ", frame k on replica k mod " + std::to_string(replicas) +
                          "): " + inner.structure;
  p.adjustments = inner.adjustments;
  for (FragmentPart part : inner.fragments) {
    if (part.nodes.size() != 1)
      throw Error("split: internal: a hybrid's inner fragment '" + part.name +
                  "' has several nodes");
    const int node = part.nodes.front();
    if (node < 0 || node >= nodes_per_replica)
      throw Error("split: internal: a hybrid's inner fragment '" + part.name +
                  "' is outside its replica");
    part.nodes.clear();
    for (int r = 0; r < replicas; ++r) part.nodes.push_back(r * nodes_per_replica + node);
    p.fragments.push_back(std::move(part));
  }
  return p;
}

StrategyPlanner strategy_hybrid() { return {kHybrid, &propose_hybrids}; }

}  // namespace dpushard::split
