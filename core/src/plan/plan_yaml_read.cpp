// plan.yaml, reading: strictly, with the one YAML reader (dpushard/yaml/yaml_reader.hpp), every
// field checked (docs/plan.md), then the plan as a whole (check_plan). Its writer is
// plan_yaml_write.cpp.
#include "dpushard/base/regular_file.hpp"
#include "dpushard/exec/backend.hpp"  // parse_fingerprint
#include "dpushard/plan/plan_check.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/plan/strategy_table.hpp"
#include "dpushard/yaml/yaml_reader.hpp"

namespace dpushard {
namespace {

PlanTensor read_tensor(const yaml::Value& v) {
  const yaml::Map m = v.map({"name", "shape", "fix_point", "fixed", "round_mode"});
  PlanTensor t;
  t.name = m.get("name").text();
  // Bounded, so element and byte counts cannot overflow (2^40 values is far past any DPU).
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
  const yaml::Value shape = m.get("shape");
  std::int64_t elements = 1;
  for (const yaml::Value& d : shape.list()) {
    const std::int64_t dim = d.integer();
    if (dim <= 0) d.fail("dimensions must be positive");
    if (dim > kMaxElements / elements) shape.fail("more than 2^40 values");
    elements *= dim;
    t.shape.push_back(dim);
  }
  t.fix_point = m.get("fix_point").int32();
  if (auto fixed = m.find("fixed")) t.fixed = fixed->boolean();
  if (auto mode = m.find("round_mode")) {
    const std::string text = mode->text();
    try {
      t.round_mode = parse_round_mode(text);
    } catch (const Error& e) {
      mode->fail(e.what());
    }
  }
  return t;
}

std::vector<PlanTensor> read_tensors(const yaml::Map& m, const char* key) {
  std::vector<PlanTensor> out;
  for (const yaml::Value& t : m.get(key).list()) out.push_back(read_tensor(t));
  return out;
}

PlanPrediction read_prediction(const yaml::Map& m) {
  PlanPrediction p;
  p.latency_ms = m.get("latency_ms").number();
  p.throughput_fps = m.get("throughput_fps").number();
  p.wire_bytes_per_frame = m.get("wire_bytes_per_frame").integer();
  p.io_bytes_per_frame = m.get("io_bytes_per_frame").integer();
  return p;
}

std::vector<yaml::Value> optional_list(const yaml::Map& m, const char* key) {
  if (auto v = m.find(key)) return v->list();
  return {};
}

std::vector<int> read_ints(const yaml::Value& v) {
  std::vector<int> out;
  for (const yaml::Value& x : v.list()) out.push_back(x.int32());
  return out;
}

// The sections of plan.yaml, one reader each (docs/plan.md lists the fields).

void read_model(const yaml::Map& root, Plan& plan) {
  const yaml::Map model = root.get("model").map({"file", "name", "sha256", "inputs", "outputs"});
  plan.model_file = model.get("file").text();
  plan.model_name = model.get("name").text();
  plan.model_sha256 = model.get("sha256").text();
  plan.model_inputs = read_tensors(model, "inputs");
  plan.model_outputs = read_tensors(model, "outputs");
}

// What was asked of the planner and what it was told about the cluster.
void read_request(const yaml::Map& root, Plan& plan) {
  plan.strategy = root.get("strategy").text();
  if (auto hybrid = root.find("hybrid")) {
    const yaml::Map h = hybrid->map({"inner_strategy", "replicas"});
    plan.inner_strategy = h.get("inner_strategy").text();
    plan.replicas = h.get("replicas").int32();
  }
  plan.requested_strategy = root.get("requested_strategy").text();
  plan.objective = root.get("objective").text();
  if (auto max = root.find("max_latency_ms")) plan.max_latency_ms = max->number();
  plan.nodes = root.get("nodes").int32();
  if (auto targets = root.find("node_targets")) plan.node_targets = targets->texts();
  if (auto share = root.find("frame_share")) plan.frame_share = read_ints(*share);
  plan.output_fix = root.get("output_fix").boolean();
  plan.link_gbps = root.get("link_gbps").number();
  const yaml::Map cost = root.get("cost_model").map({"name", "parameters"});
  plan.cost_model = cost.get("name").text();
  for (const auto& [key, v] : cost.get("parameters").open_map().entries())
    plan.cost_parameters[key] = v.number();
  plan.oracle = root.get("oracle").text();
  plan.structure = root.get("structure").text();
}

void read_memory(const yaml::Map& root, Plan& plan) {
  const auto memory = root.find("memory");
  if (!memory) return;
  const yaml::Map m =
      memory->map({"budget_bytes", "board", "frames_in_flight", "node_budget_bytes"});
  plan.memory.budget_bytes = m.get("budget_bytes").integer();
  plan.memory.board = m.get("board").text();
  plan.memory.frames_in_flight = m.get("frames_in_flight").int32();
  if (auto budgets = m.find("node_budget_bytes"))
    for (const yaml::Value& b : budgets->list())
      plan.memory.node_budget_bytes.push_back(b.integer());
}

PlanCandidate read_candidate(const yaml::Value& item) {
  const yaml::Map m =
      item.map({"strategy", "inner_strategy", "replicas", "not_possible", "latency_ms",
                "throughput_fps", "wire_bytes_per_frame", "io_bytes_per_frame"});
  PlanCandidate c;
  c.strategy = m.get("strategy").text();
  if (auto inner = m.find("inner_strategy")) {
    c.inner_strategy = inner->text();
    c.replicas = m.get("replicas").int32();
  }
  if (auto note = m.find("not_possible"))
    c.note = note->text();
  else
    c.predicted = read_prediction(m);
  return c;
}

PlanCompiled read_compiled(const yaml::Value& value) {
  const yaml::Map m = value.map({"file", "sha256", "dpu_fingerprint"});
  PlanCompiled compiled;
  compiled.file = m.get("file").text();
  compiled.sha256 = m.get("sha256").text();
  const yaml::Value fp = m.get("dpu_fingerprint");
  try {
    compiled.dpu_fingerprint = parse_fingerprint(fp.text(), "value");
  } catch (const Error& e) {
    fp.fail(e.what());
  }
  if (compiled.dpu_fingerprint == 0) fp.fail("must not be 0");
  return compiled;
}

PlanFragment read_fragment_entry(const yaml::Value& item) {
  const yaml::Map node = item.map({"name", "role", "file", "sha256", "nodes", "branches", "inputs",
                                   "outputs", "cost", "oracle", "compiled"});
  PlanFragment pf;
  pf.name = node.get("name").text();
  pf.role = node.get("role").text();
  pf.file = node.get("file").text();
  pf.sha256 = node.get("sha256").text();
  pf.nodes = read_ints(node.get("nodes"));
  if (auto branches = node.find("branches")) pf.branches = branches->texts();
  pf.inputs = read_tensors(node, "inputs");
  pf.outputs = read_tensors(node, "outputs");
  const yaml::Map c =
      node.get("cost").map({"ops", "macs", "params", "weight_bytes", "compute_ms", "memory_bytes",
                            "work_macs", "dpu_macs", "dpu_ms", "frame_ms"});
  pf.cost.ops = c.get("ops").integer();
  pf.cost.macs = c.get("macs").integer();
  pf.cost.params = c.get("params").integer();
  pf.cost.weight_bytes = c.get("weight_bytes").integer();
  pf.cost.compute_ms = c.get("compute_ms").number();
  if (auto memory = c.find("memory_bytes")) pf.cost.memory_bytes = memory->integer();
  if (auto v = c.find("work_macs")) pf.cost.work_macs = v->number();
  if (auto v = c.find("dpu_macs")) pf.cost.dpu_macs = v->number();
  if (auto v = c.find("dpu_ms")) pf.cost.dpu_ms = v->number();
  if (auto v = c.find("frame_ms")) pf.cost.frame_ms = v->number();
  const yaml::Map o = node.get("oracle").map({"verdict", "dpu_subgraphs", "findings"});
  pf.oracle_verdict = o.get("verdict").text();
  pf.dpu_subgraphs = o.get("dpu_subgraphs").int32();
  for (const yaml::Value& f : optional_list(o, "findings")) {
    const yaml::Map fm = f.map({"op", "rule", "verdict", "reason"});
    pf.oracle_findings.push_back({fm.get("op").text(), fm.get("rule").text(),
                                  fm.get("verdict").text(), fm.get("reason").text()});
  }
  if (auto compiled = node.find("compiled")) pf.compiled = read_compiled(*compiled);
  return pf;
}

// Slots are derived; when present they must agree with the fragments' nodes.
void check_slots(const yaml::Map& root, const Plan& plan) {
  for (const yaml::Value& item : optional_list(root, "slots")) {
    const yaml::Map slot = item.map({"node", "fragments"});
    const int node = slot.get("node").int32();
    for (const auto& name : slot.get("fragments").texts()) {
      bool ok = false;
      for (const auto& pf : plan.fragments)
        if (pf.name == name)
          for (int k : pf.nodes) ok = ok || k == node;
      if (!ok) item.fail("fragment '" + name + "' does not list node " + std::to_string(node));
    }
  }
}

}  // namespace

Plan plan_from_yaml(const std::string& text, const std::string& origin) {
  const yaml::Document doc = yaml::Document::parse(text, origin);
  const yaml::Map root = doc.root().map(
      {"version",      "model",          "strategy",   "hybrid",     "requested_strategy",
       "objective",    "max_latency_ms", "nodes",      "output_fix", "link_gbps",
       "node_targets", "frame_share",    "cost_model", "oracle",     "structure",
       "memory",       "predicted",      "candidates", "slots",      "fragments",
       "edges",        "adjustments"});
  Plan plan;
  const yaml::Value version = root.get("version");
  plan.version = version.int32();
  if (plan.version != 1) version.fail("unsupported version " + std::to_string(plan.version));
  read_model(root, plan);
  read_request(root, plan);
  read_memory(root, plan);
  plan.predicted = read_prediction(
      root.get("predicted")
          .map({"latency_ms", "throughput_fps", "wire_bytes_per_frame", "io_bytes_per_frame"}));
  for (const yaml::Value& item : optional_list(root, "candidates"))
    plan.candidates.push_back(read_candidate(item));
  for (const yaml::Value& item : root.get("fragments").list())
    plan.fragments.push_back(read_fragment_entry(item));
  for (const yaml::Value& item : root.get("edges").list()) {
    const yaml::Map e = item.map({"from", "output", "to", "input", "bytes"});
    plan.edges.push_back({e.get("from").text(), e.get("output").text(), e.get("to").text(),
                          e.get("input").text(), e.get("bytes").integer()});
  }
  for (const yaml::Value& item : optional_list(root, "adjustments")) {
    const yaml::Map a = item.map({"kind", "at", "to", "reason"});
    plan.adjustments.push_back(
        {a.get("kind").text(), a.get("at").text(), a.get("to").text(), a.get("reason").text()});
  }
  // The plan in itself first: a duplicate fragment name is reported as such, not as
  // the slot that then seems not to match.
  try {
    check_plan(plan);
  } catch (const Error& e) {
    doc.fail(e.what());
  }
  check_slots(root, plan);
  return plan;
}

Plan read_plan(const std::filesystem::path& dir_or_file) {
  const auto file =
      std::filesystem::is_directory(dir_or_file) ? dir_or_file / "plan.yaml" : dir_or_file;
  return plan_from_yaml(read_regular_file(file, "plan " + file.string()), file.string());
}

}  // namespace dpushard
