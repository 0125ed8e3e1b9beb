// Hybrid: R replicas of a model-parallel plan (one replica: the experts with pipelined
// branches, the hybrid of experts and pipeline). Fragment f of the inner plan on node n runs,
// in replica r, on node r * k + n; its node list is replica-major, so nodes[r] is replica
// r's and the runtime's routing (frame k to replica k mod R of every fragment) keeps a frame
// inside one replica.
#include "strategies.hpp"

namespace dpushard::split {
namespace {

constexpr const char* kPipelined = "pipelined-experts";

}  // namespace

Partition plan_hybrid(const Partition& inner, int replicas, int nodes_per_replica) {
  if (replicas < 1 || nodes_per_replica < 2 || (replicas == 1 && inner.strategy != kPipelined))
    throw Error(
        "split: internal: a hybrid needs >= 2 replicas of >= 2 nodes, or pipelined experts");
  Partition p;
  p.strategy = "hybrid";
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

std::vector<HybridOption> plan_hybrids(const StrategyInput& in, int replicas) {
  std::vector<HybridOption> out;
  const bool uniform = in.uniform_boards();
  for (int r = 1; r <= in.nodes / 2; ++r) {
    const int k = in.nodes / r;  // nodes left over (in.nodes - r * k) stay idle
    if (replicas != 0 && r != replicas) continue;
    // R and R+1 replicas of k nodes on uniform boards run one inner plan: the same latency,
    // more frames per second and fewer idle nodes with R+1, so R is never worth planning
    // (on 1,000 nodes this leaves 62 of 500 replica counts; docs/splitting.md).
    if (replicas == 0 && uniform && r > 1 && in.nodes / (r + 1) == k) continue;
    StrategyInput replica = in;
    replica.nodes = k;
    replica.models = in.models.first(k);  // the inner plan is made for replica 0's boards
    const std::vector<std::string> inners =
        r == 1 ? std::vector<std::string>{kPipelined}
               : std::vector<std::string>{"experts", "pipeline", kPipelined};
    for (const std::string& inner : inners) {
      HybridOption option;
      option.replicas = r;
      option.inner_strategy = inner;
      std::string why;
      auto p = inner == "experts"    ? plan_experts(replica, why)
               : inner == "pipeline" ? plan_pipeline(replica, {}, why)
                                     : plan_pipelined_experts(replica, why);
      if (p) {
        option.partition = plan_hybrid(*p, r, k);
        if (const int idle = in.nodes - r * k; idle > 0)
          option.partition->adjustments.push_back(
              {"idle_nodes", "", "",
               std::to_string(r) + " replicas of " + std::to_string(k) + " nodes on " +
                   std::to_string(in.nodes) + " nodes: " + std::to_string(idle) +
                   (idle == 1 ? " node stays" : " nodes stay") + " idle"});
      } else if (r > 1 && inner == kPipelined) {
        continue;  // replicas too small to pipeline a branch: not worth a line of their own
      } else {
        option.why_not = inner + " on " + std::to_string(k) + " nodes is not possible: " + why;
        if (r == 1 && in.nodes < 4)
          option.why_not += "; replicas of a model-parallel plan need at least 4 nodes";
      }
      out.push_back(std::move(option));
    }
  }
  return out;
}

}  // namespace dpushard::split
