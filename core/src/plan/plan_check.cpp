// Plan validation: the plan in itself (check_plan; against its folder: check_plan_files in
// fragment_io.cpp). Needs nothing but the graph module, so the plan.yaml fuzzer links it alone.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dpushard/graph/shape.hpp"
#include "dpushard/plan/plan_check.hpp"
#include "dpushard/plan/plan_memory.hpp"
#include "dpushard/plan/strategy_table.hpp"

namespace dpushard {
namespace {

constexpr int kMaxFrameShare = 1024;  // frames in one cycle of replica_cycle

const PlanTensor* find_tensor(const std::vector<PlanTensor>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

bool safe_relative(const std::string& file) {
  const std::filesystem::path p(file);
  if (file.empty() || p.is_absolute()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

// "experts, pipeline or pipelined-experts": what a hybrid may replicate.
std::string inner_strategies_text() {
  std::vector<std::string> names;
  for (const StrategyInfo& s : strategy_table())
    if (s.inner_min_replicas > 0) names.push_back(s.name);
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

// A hybrid: `replicas` copies of an experts, pipeline or pipelined-experts plan, each on
// nodes of its own (pipelined experts may have one replica). Every fragment has one node per
// replica (nodes[r] in replica r; the runtime sends frame k to replica k mod R of every
// fragment), and no node serves two replicas.
void check_hybrid(const Plan& plan) {
  const StrategyInfo* inner = find_strategy(plan.inner_strategy);
  if (inner == nullptr || inner->inner_min_replicas == 0)
    throw Error("hybrid.inner_strategy: must be " + inner_strategies_text() + ", not '" +
                plan.inner_strategy + "'");
  if (plan.replicas < inner->inner_min_replicas)
    throw Error("hybrid.replicas: must be at least " + std::to_string(inner->inner_min_replicas));
  std::map<int, std::size_t> replica_of;  // node -> replica
  for (const auto& f : plan.fragments) {
    if (f.nodes.size() != static_cast<std::size_t>(plan.replicas))
      throw Error("fragment '" + f.name + "': " + std::to_string(f.nodes.size()) +
                  " nodes, but the hybrid has " + std::to_string(plan.replicas) + " replicas");
    for (std::size_t r = 0; r < f.nodes.size(); ++r) {
      const auto [it, added] = replica_of.emplace(f.nodes[r], r);
      if (!added && it->second != r)
        throw Error("fragment '" + f.name + "': node " + std::to_string(f.nodes[r]) +
                    " is in replica " + std::to_string(r) + " and replica " +
                    std::to_string(it->second));
    }
  }
}

// Each fragment on its own: a unique name, safe files, node slots, inputs and outputs.
// Returns the fragments' positions by name.
std::map<std::string, std::size_t> checked_fragments(const Plan& plan) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < plan.fragments.size(); ++i) {
    const auto& f = plan.fragments[i];
    const std::string where = "fragment '" + f.name + "'";
    if (f.name.empty() || f.name == "model")
      throw Error("fragments[" + std::to_string(i) + "]: bad name '" + f.name + "'");
    if (!index.emplace(f.name, i).second) throw Error(where + ": duplicate name");
    if (!safe_relative(f.file))
      throw Error(where + ": file '" + f.file + "' must be a relative path inside the plan folder");
    if (f.compiled && !safe_relative(f.compiled->file))
      throw Error(where + ": compiled file '" + f.compiled->file +
                  "' must be a relative path inside the plan folder");
    if (f.nodes.empty()) throw Error(where + ": no node slot");
    for (int n : f.nodes)
      if (n < 0 || n >= plan.nodes)
        throw Error(where + ": node " + std::to_string(n) + " is outside 0.." +
                    std::to_string(plan.nodes - 1));
    if (f.inputs.empty()) throw Error(where + ": no inputs");
    if (f.outputs.empty()) throw Error(where + ": no outputs");
    for (const auto& t : f.outputs)
      if (!t.fixed && plan.output_fix)
        throw Error(where + ": output '" + t.name +
                    "' is not fixed but the plan has output_fix: true");
  }
  return index;
}

// An edge's sending side: a model input or a fragment's output.
const PlanTensor& edge_source(const Plan& plan, const std::map<std::string, std::size_t>& index,
                              const PlanEdge& e, const std::string& where) {
  const PlanTensor* src = nullptr;
  if (e.from == "model") {
    src = find_tensor(plan.model_inputs, e.output);
    if (!src) throw Error(where + ": '" + e.output + "' is not a model input");
  } else {
    auto it = index.find(e.from);
    if (it == index.end()) throw Error(where + ": unknown fragment '" + e.from + "'");
    src = find_tensor(plan.fragments[it->second].outputs, e.output);
    if (!src) throw Error(where + ": '" + e.output + "' is not an output of '" + e.from + "'");
  }
  return *src;
}

// An edge's receiving side: a model output or an input of a later fragment.
const PlanTensor& edge_destination(const Plan& plan,
                                   const std::map<std::string, std::size_t>& index,
                                   const PlanEdge& e, const std::string& where) {
  const PlanTensor* dst = nullptr;
  if (e.to == "model") {
    dst = find_tensor(plan.model_outputs, e.input);
    if (!dst) throw Error(where + ": '" + e.input + "' is not a model output");
    if (e.from == "model") throw Error(where + ": a model input cannot be a model output");
  } else {
    auto it = index.find(e.to);
    if (it == index.end()) throw Error(where + ": unknown fragment '" + e.to + "'");
    dst = find_tensor(plan.fragments[it->second].inputs, e.input);
    if (!dst) throw Error(where + ": '" + e.input + "' is not an input of '" + e.to + "'");
    if (e.from != "model" && index.at(e.from) >= it->second)
      throw Error(where + ": '" + e.from + "' does not come before '" + e.to + "' in plan order");
  }
  return *dst;
}

// What crosses an edge is what both sides say: shape, fix point, fixed, name and bytes.
void check_edge_tensors(const PlanEdge& e, const PlanTensor& src, const PlanTensor& dst,
                        const std::string& where) {
  if (src.shape != dst.shape)
    throw Error(where + ": shape " + shape_text(src.shape) + " does not match " +
                shape_text(dst.shape));
  if (src.fix_point != dst.fix_point)
    throw Error(where + ": fix_point " + std::to_string(src.fix_point) + " does not match " +
                std::to_string(dst.fix_point));
  if (!dst.fixed) throw Error(where + ": the receiving side must be fixed");
  if (src.fixed && e.output != e.input)
    throw Error(where + ": a fixed tensor keeps its name across a boundary");
  if (e.bytes != src.wire_bytes())
    throw Error(where + ": bytes " + std::to_string(e.bytes) + " should be " +
                std::to_string(src.wire_bytes()));
}

// Edges: known endpoints and tensors, matching shapes and fix points, plan order; then
// every fragment input and model output fed exactly once, every fragment output used.
void check_edges(const Plan& plan, const std::map<std::string, std::size_t>& index) {
  std::map<std::pair<std::string, std::string>, int> fed;  // (fragment, input) -> edges
  std::set<std::pair<std::string, std::string>> used_outputs;
  for (std::size_t i = 0; i < plan.edges.size(); ++i) {
    const auto& e = plan.edges[i];
    const std::string where = "edges[" + std::to_string(i) + "] (" + e.from + ":" + e.output +
                              " -> " + e.to + ":" + e.input + ")";
    const PlanTensor& src = edge_source(plan, index, e, where);
    const PlanTensor& dst = edge_destination(plan, index, e, where);
    check_edge_tensors(e, src, dst, where);
    if (++fed[{e.to, e.input}] > 1) throw Error(where + ": '" + e.input + "' is fed twice");
    used_outputs.insert({e.from, e.output});
  }
  for (const auto& f : plan.fragments) {
    for (const auto& t : f.inputs)
      if (!fed.count({f.name, t.name}))
        throw Error("fragment '" + f.name + "': input '" + t.name + "' is fed by no edge");
    for (const auto& t : f.outputs)
      if (!used_outputs.count({f.name, t.name}))
        throw Error("fragment '" + f.name + "': output '" + t.name + "' feeds no edge");
  }
  for (const auto& t : plan.model_outputs)
    if (!fed.count({"model", t.name}))
      throw Error("model output '" + t.name + "' is produced by no fragment");
}

}  // namespace

void check_plan(const Plan& plan) {
  if (plan.nodes < 1) throw Error("nodes: must be at least 1");
  const StrategyInfo* strategy = find_strategy(plan.strategy);
  if (strategy == nullptr || !strategy->recorded)
    throw Error("strategy: unknown '" + plan.strategy + "'");
  if (!strategy->composite && (plan.replicas != 0 || !plan.inner_strategy.empty()))
    throw Error("hybrid: only for the hybrid strategy");
  if (plan.objective != "latency" && plan.objective != "throughput")
    throw Error("objective: unknown '" + plan.objective + "'");
  if (!(plan.max_latency_ms >= 0)) throw Error("max_latency_ms: must be a number >= 0");
  if (plan.fragments.empty()) throw Error("fragments: empty");
  if (plan.memory.budget_bytes < 0 || plan.memory.frames_in_flight < 0)
    throw Error("memory: budget_bytes and frames_in_flight must be >= 0");
  if (!plan.node_targets.empty()) {
    if (plan.node_targets.size() != static_cast<std::size_t>(plan.nodes))
      throw Error("node_targets: " + std::to_string(plan.node_targets.size()) + " targets for " +
                  std::to_string(plan.nodes) + " nodes");
    for (const auto& t : plan.node_targets)
      if (t.empty()) throw Error("node_targets: an empty target name");
  }
  if (!plan.frame_share.empty()) {
    if (!strategy->baseline)
      throw Error("frame_share: only for the replicate strategy, not " + plan.strategy);
    const std::size_t replicas = plan.fragments.front().nodes.size();
    if (plan.frame_share.size() != replicas)
      throw Error("frame_share: " + std::to_string(plan.frame_share.size()) + " shares for " +
                  std::to_string(replicas) + " replicas");
    int total = 0;
    for (int w : plan.frame_share) {
      if (w < 1 || w > kMaxFrameShare) throw Error("frame_share: a share must be 1 to 1024");
      total += w;
    }
    if (total > kMaxFrameShare) throw Error("frame_share: the shares add up to more than 1024");
  }
  if (!plan.memory.node_budget_bytes.empty()) {
    if (plan.memory.node_budget_bytes.size() != static_cast<std::size_t>(plan.nodes) ||
        plan.node_targets.size() != static_cast<std::size_t>(plan.nodes))
      throw Error("memory.node_budget_bytes: one budget per node, with node_targets");
    for (std::int64_t b : plan.memory.node_budget_bytes)
      if (b < 0) throw Error("memory.node_budget_bytes: must be >= 0");
  }
  if (plan.model_inputs.empty()) throw Error("model.inputs: empty");
  if (plan.model_outputs.empty()) throw Error("model.outputs: empty");
  if (strategy->composite) check_hybrid(plan);
  const auto index = checked_fragments(plan);
  check_edges(plan, index);
  if (const auto misfit = memory_misfit(plan)) throw Error("memory: " + *misfit);
}

}  // namespace dpushard
