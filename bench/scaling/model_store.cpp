#include "scaling/model_store.hpp"

#include <algorithm>
#include <map>
#include <memory>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/fragment_io.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/split.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"

namespace dpushard::bench {

namespace fs = std::filesystem;

fs::path model_dir(const SweepOptions& o, const std::string& size) {
  const std::string spec = "e" + std::to_string(o.experts) + "-" + o.input + "-s" +
                           std::to_string(o.seed) + (o.weights ? "" : "-nw");
  return o.models_dir / spec / (o.family + "-" + size);
}

fs::path plan_dir(const SweepOptions& o, const std::string& size, int nodes,
                  const std::string& strategy) {
  return model_dir(o, size) /
         (nodes == 1 ? std::string("n1") : "n" + std::to_string(nodes) + "-" + strategy);
}

fs::path ensure_model(const SweepOptions& o, const std::string& size) {
  fs::path file = model_dir(o, size);
  file += "_int.xmodel";
  std::error_code ec;
  if (fs::is_regular_file(file, ec)) return file;
  ZooSpec spec;
  try {
    spec.params = parse_count(size);
  } catch (const Error& e) {
    throw Error("--sizes: " + std::string(e.what()));
  }
  try {
    spec.input = parse_input_shape(o.input);
  } catch (const Error& e) {
    throw Error("--input: " + std::string(e.what()));
  }
  spec.experts = o.experts;
  spec.seed = o.seed;
  spec.weights = o.weights;
  spec.attention = parse_convvit_attention(o.attention);
  const Graph model = o.family == "cnn" ? make_cnn(spec) : make_convvit(spec);
  fs::create_directories(file.parent_path(), ec);
  if (ec) throw Error(file.parent_path().string() + ": cannot create: " + ec.message());
  write_xmodel(model, file);
  return file;
}

Plan ensure_plan(const SweepOptions& o, const std::string& size, int nodes,
                 const std::string& strategy, double link_gbps,
                 const std::vector<std::string>& node_targets) {
  const fs::path dir = plan_dir(o, size, nodes, strategy);
  std::error_code ec;
  if (!fs::is_regular_file(dir / "plan.yaml", ec)) {
    const fs::path model_file = ensure_model(o, size);
    const Graph model = read_xmodel(model_file);
    SplitOptions split;
    split.nodes = nodes;
    // One node: the whole model as one fragment, whatever the strategy.
    split.strategy = parse_strategy(nodes == 1 ? baseline_strategy() : strategy);
    split.objective = parse_objective(o.objective);
    split.link_gbps = link_gbps;
    split.model_file = model_file.string();
    split.model_sha256 = sha256_file(model_file);
    // Mixed boards: the targets of the N nodes (a node without one is the reference board,
    // --cost-target or the KV260); planned for them when one is not the reference board.
    const std::string reference = o.cost_target.empty() ? "kv260" : o.cost_target;
    std::vector<std::string> names;
    for (int n = 0; n < nodes && n < static_cast<int>(node_targets.size()); ++n) {
      const std::string& t = node_targets[static_cast<std::size_t>(n)];
      names.push_back(t.empty() ? reference : t);
    }
    const bool mixed = std::any_of(names.begin(), names.end(),
                                   [&](const std::string& t) { return t != reference; });
    if (!mixed) names.clear();
    // As `dpushard split --target <cost> [--node-targets ...]`: the memory budget is the
    // target's (the roofline's is the KV260's); without a cost target the first node's board
    // is the reference, priced with its timing model.
    const std::string base = !o.cost_target.empty() ? o.cost_target
                             : mixed                ? names.front()
                                                    : std::string("kv260");
    const Target target = resolve_target(base);
    std::unique_ptr<CostModel> cost;
    if (!o.cost_target.empty() || mixed) {
      TimingCostParams params;
      params.link_gbps = link_gbps;
      cost = make_timing_cost_model(target, params);
      split.cost_model = cost.get();
    }
    split.memory_budget_bytes = target.model_memory_bytes;
    split.memory_board = target.name;
    std::map<std::string, std::unique_ptr<CostModel>> node_costs;
    for (const std::string& name : names) {
      const Target t = resolve_target(name);
      if (!node_costs.count(name)) {
        TimingCostParams params;
        params.link_gbps = link_gbps;
        // The reference board's own model: plans for one kind of board stay as --target's.
        node_costs[name] = name == base ? nullptr : make_timing_cost_model(t, params);
      }
      split.node_cost_models.push_back(node_costs[name] ? node_costs[name].get() : cost.get());
      split.node_targets.push_back(t.name);
      split.node_memory_budget_bytes.push_back(t.model_memory_bytes);
    }
    SplitResult result = split_model(model, split);
    write_split(result, dir);
  }
  Plan plan = read_plan(dir);
  check_plan_files(plan, dir);
  return plan;
}

}  // namespace dpushard::bench
