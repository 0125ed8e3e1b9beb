// Experts whose branches are pipelined: the experts' stem / branches / tail, with more node
// slots than branches, so a branch gets several slots and runs as a pipeline of stages over
// them (each stage a contiguous run of the branch's units, cut where the balance is best,
// pipeline_cuts.hpp). The slots go one at a time to the branch with the most predicted time
// per stage; the costliest branches take the first slots.
#include <algorithm>
#include <numeric>

#include "experts_layout.hpp"
#include "pipeline_cuts.hpp"

namespace dpushard::split {
namespace {

// Stages per branch: one each, then each slot left to the branch with the most time per
// stage that still has a unit to spare.
std::vector<std::size_t> stages_per_branch(const ForkJoin& fj, std::size_t slots) {
  std::vector<std::size_t> stages(fj.branches.size(), 1);
  for (std::size_t left = slots - fj.branches.size(); left > 0; --left) {
    std::optional<std::size_t> most;
    for (std::size_t b = 0; b < stages.size(); ++b) {
      if (stages[b] >= fj.branches[b].size()) continue;
      const double per_stage = fj.branch_seconds[b] / static_cast<double>(stages[b]);
      if (!most || per_stage > fj.branch_seconds[*most] / static_cast<double>(stages[*most]))
        most = b;
    }
    if (!most) break;
    ++stages[*most];
  }
  return stages;
}

// Where branch `b`'s stages end (positions in its units), for `stage_count` stages on the
// slots from `first` on: the balance at their nodes' speeds, or one stage.
std::vector<std::size_t> stage_ends(const StrategyInput& in, const ForkJoin& fj,
                                    const std::vector<int>& slots, std::size_t b,
                                    std::size_t stage_count, std::size_t first) {
  const auto& units = fj.branches[b];
  if (stage_count <= 1) return {units.size() - 1};
  std::vector<double> scale;
  for (std::size_t k = 0; k < stage_count; ++k)
    scale.push_back(1.0 / in.speed_of(slots[first + k]));
  return balance_stages(StageCosts(in.graph, in.cost, in.output_fix, units), stage_count, scale);
}

// Branch `b`'s fragments, one per stage ending at `ends`, on the slots from `first` on.
std::vector<FragmentPart> branch_stages(const UnitGraph& graph, const ForkJoin& fj,
                                        const std::vector<int>& slots, std::size_t b,
                                        const std::vector<std::size_t>& ends, std::size_t first) {
  const auto& units = fj.branches[b];
  std::vector<FragmentPart> out;
  std::size_t begin = 0;
  for (std::size_t s = 0; s < ends.size(); ++s) {
    FragmentPart part;
    part.name = "experts" + std::to_string(b) +
                (ends.size() > 1 ? "_stage" + std::to_string(s) : std::string());
    part.role = "experts";
    part.nodes = {slots[first + s]};
    double seconds = 0;
    for (std::size_t i = begin; i <= ends[s]; ++i) {
      part.units.push_back(units[i]);
      seconds += graph.unit(units[i]).seconds;
    }
    begin = ends[s] + 1;
    std::sort(part.units.begin(), part.units.end(),
              [&](UnitId x, UnitId y) { return graph.position(x) < graph.position(y); });
    part.branches.push_back(branch_label(graph, part.units, seconds) +
                            (ends.size() > 1 ? ", stage " + std::to_string(s + 1) + " of " +
                                                   std::to_string(ends.size()) + " of branch " +
                                                   std::to_string(b)
                                             : std::string()));
    out.push_back(std::move(part));
  }
  return out;
}

std::optional<Partition> plan_pipelined_experts(const StrategyInput& in, std::string& why_not) {
  const UnitGraph& graph = in.graph;
  const auto layout = experts_layout(in, why_not);
  if (!layout) return std::nullopt;
  const ForkJoin& fj = layout->fork_join;
  std::vector<int> listed(static_cast<std::size_t>(in.nodes));
  std::iota(listed.begin(), listed.end(), 0);
  const std::vector<int> slots = node_slots(in, listed);
  const std::size_t branches = fj.branches.size();
  const std::string on = std::to_string(branches) + " branches on " + std::to_string(slots.size()) +
                         (slots.size() == listed.size() ? " nodes" : " DPU cores");
  if (slots.size() <= branches) {
    why_not = on + ": no node is left to pipeline a branch over (that is the experts plan)";
    return std::nullopt;
  }
  const std::vector<std::size_t> stages = stages_per_branch(fj, slots.size());
  if (std::all_of(stages.begin(), stages.end(), [](std::size_t s) { return s == 1; })) {
    why_not = on + ": every branch is a single unit, so none can be pipelined";
    return std::nullopt;
  }

  // Each branch's stages, the costliest branch on the first slots.
  std::vector<std::size_t> by_cost(branches);
  std::iota(by_cost.begin(), by_cost.end(), std::size_t{0});
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](std::size_t a, std::size_t b) {
    return fj.branch_seconds[a] > fj.branch_seconds[b];
  });
  std::vector<std::vector<FragmentPart>> of_branch(branches);
  std::string pipelined;
  std::size_t next = 0;
  for (std::size_t b : by_cost) {
    const std::vector<std::size_t> ends = stage_ends(in, fj, slots, b, stages[b], next);
    if (stages[b] > 1)
      pipelined += std::string(pipelined.empty() ? "" : ", ") + "branch " + std::to_string(b) +
                   " in " + std::to_string(ends.size()) + " stages";
    of_branch[b] = branch_stages(in.graph, fj, slots, b, ends, next);
    next += ends.size();
  }
  // Plan order: the branches in the fork-join's order, each branch's stages in order.
  std::vector<FragmentPart> parts;
  for (auto& branch : of_branch)
    for (auto& part : branch) parts.push_back(std::move(part));
  Partition best = place_stem_and_tail(
      in, *layout, describe(graph, fj) + "; " + pipelined, [&](int, int) { return parts; },
      next == 0 ? 0 : slots[next - 1] + 1);
  best.strategy = "pipelined-experts";
  if (next < slots.size())
    best.adjustments.push_back({"idle_nodes", "", "",
                                on + ": " + std::to_string(slots.size() - next) +
                                    " left over (a branch's further stage would slow it down)"});
  return best;
}

std::vector<Proposal> propose_pipelined_experts(const StrategyInput& in) {
  std::string why_not;
  std::optional<Partition> p = plan_pipelined_experts(in, why_not);
  return one_proposal(std::move(p), why_not);
}

}  // namespace

StrategyPlanner strategy_pipelined_experts() {
  return {"pipelined-experts", &propose_pipelined_experts};
}

}  // namespace dpushard::split
