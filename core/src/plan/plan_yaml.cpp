// plan.yaml: writing with yaml-cpp's emitter, reading strictly (docs/plan.md).
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "dpushard/atomic_file.hpp"
#include "dpushard/backend.hpp"
#include "dpushard/plan_check.hpp"
#include "dpushard/plan_yaml.hpp"
#include "dpushard/regular_file.hpp"

namespace dpushard {
namespace {

// ---- writing ----

// The shortest text that reads back as the same double (no 0.56999999999999995).
std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void emit_shape(YAML::Emitter& out, const std::vector<std::int64_t>& shape) {
  out << YAML::Flow << YAML::BeginSeq;
  for (auto d : shape) out << d;
  out << YAML::EndSeq;
}

void emit_tensor(YAML::Emitter& out, const PlanTensor& t) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << t.name;
  out << YAML::Key << "shape" << YAML::Value;
  emit_shape(out, t.shape);
  out << YAML::Key << "fix_point" << YAML::Value << t.fix_point;
  if (!t.fixed) {
    out << YAML::Key << "fixed" << YAML::Value << false;
    out << YAML::Key << "round_mode" << YAML::Value << std::string(round_mode_name(t.round_mode));
  }
  out << YAML::EndMap;
}

void emit_tensors(YAML::Emitter& out, const char* key, const std::vector<PlanTensor>& ts) {
  out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& t : ts) emit_tensor(out, t);
  out << YAML::EndSeq;
}

void emit_prediction(YAML::Emitter& out, const PlanPrediction& p) {
  out << YAML::Key << "latency_ms" << YAML::Value << number(p.latency_ms);
  out << YAML::Key << "throughput_fps" << YAML::Value << number(p.throughput_fps);
  out << YAML::Key << "wire_bytes_per_frame" << YAML::Value << p.wire_bytes_per_frame;
  out << YAML::Key << "io_bytes_per_frame" << YAML::Value << p.io_bytes_per_frame;
}

// ---- reading ----

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error("plan " + origin_ + ": " + field + ": " + what);
  }

  YAML::Node need(const YAML::Node& map, const std::string& key, const std::string& field) const {
    if (!map.IsMap()) fail(field, "expected a map");
    YAML::Node v = map[key];
    if (!v) fail(field + "." + key, "missing");
    return v;
  }

  template <typename T>
  T get(const YAML::Node& map, const std::string& key, const std::string& field) const {
    const YAML::Node v = need(map, key, field);
    try {
      return v.as<T>();
    } catch (const YAML::Exception&) {
      fail(field + "." + key, "not a valid value");
    }
  }

  template <typename T>
  T get_or(const YAML::Node& map, const std::string& key, const std::string& field,
           T fallback) const {
    if (!map[key]) return fallback;
    return get<T>(map, key, field);
  }

  void only(const YAML::Node& map, std::initializer_list<const char*> keys,
            const std::string& field) const {
    if (!map.IsMap()) fail(field, "expected a map");
    for (const auto& kv : map) {
      const std::string k = kv.first.Scalar();
      bool known = false;
      for (const char* key : keys) known = known || k == key;
      if (!known) fail(field + "." + k, "unknown key");
    }
  }

  YAML::Node seq(const YAML::Node& map, const std::string& key, const std::string& field,
                 bool required = true) const {
    if (!map[key]) {
      if (required) fail(field + "." + key, "missing");
      return YAML::Node(YAML::NodeType::Sequence);
    }
    const YAML::Node v = map[key];
    if (!v.IsSequence()) fail(field + "." + key, "expected a list");
    return v;
  }

  PlanTensor tensor(const YAML::Node& node, const std::string& field) const {
    only(node, {"name", "shape", "fix_point", "fixed", "round_mode"}, field);
    PlanTensor t;
    t.name = get<std::string>(node, "name", field);
    t.shape = get<std::vector<std::int64_t>>(node, "shape", field);
    // Bounded, so element and byte counts cannot overflow (2^40 values is far past any DPU).
    constexpr std::int64_t kMaxElements = std::int64_t{1} << 40;
    std::int64_t elements = 1;
    for (auto d : t.shape) {
      if (d <= 0) fail(field + ".shape", "dimensions must be positive");
      if (d > kMaxElements / elements) fail(field + ".shape", "more than 2^40 values");
      elements *= d;
    }
    t.fix_point = get<int>(node, "fix_point", field);
    t.fixed = get_or<bool>(node, "fixed", field, true);
    if (node["round_mode"]) {
      try {
        t.round_mode = parse_round_mode(get<std::string>(node, "round_mode", field));
      } catch (const Error& e) {
        fail(field + ".round_mode", e.what());
      }
    }
    return t;
  }

  std::vector<PlanTensor> tensors(const YAML::Node& map, const std::string& key,
                                  const std::string& field) const {
    std::vector<PlanTensor> out;
    const YAML::Node list = seq(map, key, field);
    for (std::size_t i = 0; i < list.size(); ++i)
      out.push_back(tensor(list[i], field + "." + key + "[" + std::to_string(i) + "]"));
    return out;
  }

  PlanPrediction prediction(const YAML::Node& node, const std::string& field) const {
    PlanPrediction p;
    p.latency_ms = get<double>(node, "latency_ms", field);
    p.throughput_fps = get<double>(node, "throughput_fps", field);
    p.wire_bytes_per_frame = get<std::int64_t>(node, "wire_bytes_per_frame", field);
    p.io_bytes_per_frame = get<std::int64_t>(node, "io_bytes_per_frame", field);
    return p;
  }

 private:
  std::string origin_;
};

}  // namespace

std::string plan_to_yaml(const Plan& plan) {
  YAML::Emitter out;
  out << YAML::Comment("dpushard split plan; schema in docs/plan.md");
  out << YAML::BeginMap;
  out << YAML::Key << "version" << YAML::Value << plan.version;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "file" << YAML::Value << plan.model_file;
  out << YAML::Key << "name" << YAML::Value << plan.model_name;
  out << YAML::Key << "sha256" << YAML::Value << plan.model_sha256;
  emit_tensors(out, "inputs", plan.model_inputs);
  emit_tensors(out, "outputs", plan.model_outputs);
  out << YAML::EndMap;
  out << YAML::Key << "strategy" << YAML::Value << plan.strategy;
  if (plan.strategy == "hybrid") {
    out << YAML::Key << "hybrid" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "inner_strategy" << YAML::Value << plan.inner_strategy;
    out << YAML::Key << "replicas" << YAML::Value << plan.replicas;
    out << YAML::EndMap;
  }
  out << YAML::Key << "requested_strategy" << YAML::Value << plan.requested_strategy;
  out << YAML::Key << "objective" << YAML::Value << plan.objective;
  if (plan.max_latency_ms > 0)
    out << YAML::Key << "max_latency_ms" << YAML::Value << number(plan.max_latency_ms);
  out << YAML::Key << "nodes" << YAML::Value << plan.nodes;
  out << YAML::Key << "output_fix" << YAML::Value << plan.output_fix;
  out << YAML::Key << "link_gbps" << YAML::Value << number(plan.link_gbps);
  out << YAML::Key << "cost_model" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << plan.cost_model;
  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : plan.cost_parameters) out << YAML::Key << k << YAML::Value << number(v);
  out << YAML::EndMap << YAML::EndMap;
  out << YAML::Key << "oracle" << YAML::Value << plan.oracle;
  out << YAML::Key << "structure" << YAML::Value << plan.structure;
  if (plan.memory.budget_bytes > 0) {
    out << YAML::Key << "memory" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "budget_bytes" << YAML::Value << plan.memory.budget_bytes;
    out << YAML::Key << "board" << YAML::Value << plan.memory.board;
    out << YAML::Key << "frames_in_flight" << YAML::Value << plan.memory.frames_in_flight;
    out << YAML::EndMap;
  }
  out << YAML::Key << "predicted" << YAML::Value << YAML::BeginMap;
  emit_prediction(out, plan.predicted);
  out << YAML::EndMap;
  out << YAML::Key << "candidates" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : plan.candidates) {
    out << YAML::BeginMap;
    out << YAML::Key << "strategy" << YAML::Value << c.strategy;
    if (!c.inner_strategy.empty()) {
      out << YAML::Key << "inner_strategy" << YAML::Value << c.inner_strategy;
      out << YAML::Key << "replicas" << YAML::Value << c.replicas;
    }
    if (c.note.empty()) {
      emit_prediction(out, c.predicted);
    } else {
      out << YAML::Key << "not_possible" << YAML::Value << c.note;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  // Node slots: which fragments each node runs (derived from the fragments' nodes).
  out << YAML::Key << "slots" << YAML::Value << YAML::BeginSeq;
  for (int n = 0; n < plan.nodes; ++n) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "node" << YAML::Value << n;
    out << YAML::Key << "fragments" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& f : plan.fragments)
      for (int k : f.nodes)
        if (k == n) out << f.name;
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "fragments" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : plan.fragments) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << f.name;
    out << YAML::Key << "role" << YAML::Value << f.role;
    out << YAML::Key << "file" << YAML::Value << f.file;
    out << YAML::Key << "sha256" << YAML::Value << f.sha256;
    out << YAML::Key << "nodes" << YAML::Value << YAML::Flow << f.nodes;
    if (!f.branches.empty()) out << YAML::Key << "branches" << YAML::Value << f.branches;
    emit_tensors(out, "inputs", f.inputs);
    emit_tensors(out, "outputs", f.outputs);
    out << YAML::Key << "cost" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "ops" << YAML::Value << f.cost.ops;
    out << YAML::Key << "macs" << YAML::Value << f.cost.macs;
    out << YAML::Key << "params" << YAML::Value << f.cost.params;
    out << YAML::Key << "weight_bytes" << YAML::Value << f.cost.weight_bytes;
    out << YAML::Key << "compute_ms" << YAML::Value << number(f.cost.compute_ms);
    if (f.cost.memory_bytes > 0)
      out << YAML::Key << "memory_bytes" << YAML::Value << f.cost.memory_bytes;
    out << YAML::EndMap;
    out << YAML::Key << "oracle" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "verdict" << YAML::Value << f.oracle_verdict;
    out << YAML::Key << "dpu_subgraphs" << YAML::Value << f.dpu_subgraphs;
    out << YAML::Key << "findings" << YAML::Value;
    if (f.oracle_findings.empty()) out << YAML::Flow;
    out << YAML::BeginSeq;
    for (const auto& x : f.oracle_findings) {
      out << YAML::BeginMap << YAML::Key << "op" << YAML::Value << x.op;
      out << YAML::Key << "rule" << YAML::Value << x.rule;
      out << YAML::Key << "verdict" << YAML::Value << x.verdict;
      out << YAML::Key << "reason" << YAML::Value << x.reason << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
    if (f.compiled) {
      out << YAML::Key << "compiled" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "file" << YAML::Value << f.compiled->file;
      out << YAML::Key << "sha256" << YAML::Value << f.compiled->sha256;
      out << YAML::Key << "dpu_fingerprint" << YAML::Value
          << fingerprint_text(f.compiled->dpu_fingerprint);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "edges" << YAML::Value << YAML::BeginSeq;
  for (const auto& e : plan.edges) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "from" << YAML::Value << e.from;
    out << YAML::Key << "output" << YAML::Value << e.output;
    out << YAML::Key << "to" << YAML::Value << e.to;
    out << YAML::Key << "input" << YAML::Value << e.input;
    out << YAML::Key << "bytes" << YAML::Value << e.bytes;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "adjustments" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : plan.adjustments) {
    out << YAML::BeginMap;
    out << YAML::Key << "kind" << YAML::Value << a.kind;
    out << YAML::Key << "at" << YAML::Value << a.at;
    out << YAML::Key << "to" << YAML::Value << a.to;
    out << YAML::Key << "reason" << YAML::Value << a.reason;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::EndMap;
  if (!out.good()) throw Error("plan: cannot emit YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

void write_plan(const Plan& plan, const std::filesystem::path& dir) {
  write_file_atomically(dir / "plan.yaml", plan_to_yaml(plan));
}

Plan plan_from_yaml(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error("plan " + origin + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  const Reader r(origin);
  r.only(root, {"version",    "model",          "strategy",  "hybrid",     "requested_strategy",
                "objective",  "max_latency_ms", "nodes",     "output_fix", "link_gbps",
                "cost_model", "oracle",         "structure", "memory",     "predicted",
                "candidates", "slots",          "fragments", "edges",      "adjustments"},
         "(top)");
  Plan plan;
  plan.version = r.get<int>(root, "version", "(top)");
  if (plan.version != 1) r.fail("version", "unsupported version " + std::to_string(plan.version));
  const YAML::Node model = r.need(root, "model", "(top)");
  r.only(model, {"file", "name", "sha256", "inputs", "outputs"}, "model");
  plan.model_file = r.get<std::string>(model, "file", "model");
  plan.model_name = r.get<std::string>(model, "name", "model");
  plan.model_sha256 = r.get<std::string>(model, "sha256", "model");
  plan.model_inputs = r.tensors(model, "inputs", "model");
  plan.model_outputs = r.tensors(model, "outputs", "model");
  plan.strategy = r.get<std::string>(root, "strategy", "(top)");
  if (const YAML::Node hybrid = root["hybrid"]) {
    r.only(hybrid, {"inner_strategy", "replicas"}, "hybrid");
    plan.inner_strategy = r.get<std::string>(hybrid, "inner_strategy", "hybrid");
    plan.replicas = r.get<int>(hybrid, "replicas", "hybrid");
  }
  plan.requested_strategy = r.get<std::string>(root, "requested_strategy", "(top)");
  plan.objective = r.get<std::string>(root, "objective", "(top)");
  if (root["max_latency_ms"]) plan.max_latency_ms = r.get<double>(root, "max_latency_ms", "(top)");
  plan.nodes = r.get<int>(root, "nodes", "(top)");
  plan.output_fix = r.get<bool>(root, "output_fix", "(top)");
  plan.link_gbps = r.get<double>(root, "link_gbps", "(top)");
  const YAML::Node cost = r.need(root, "cost_model", "(top)");
  plan.cost_model = r.get<std::string>(cost, "name", "cost_model");
  plan.cost_parameters = r.get<std::map<std::string, double>>(cost, "parameters", "cost_model");
  plan.oracle = r.get<std::string>(root, "oracle", "(top)");
  plan.structure = r.get<std::string>(root, "structure", "(top)");
  if (root["memory"]) {
    const YAML::Node memory = r.need(root, "memory", "(top)");
    r.only(memory, {"budget_bytes", "board", "frames_in_flight"}, "memory");
    plan.memory.budget_bytes = r.get<std::int64_t>(memory, "budget_bytes", "memory");
    plan.memory.board = r.get<std::string>(memory, "board", "memory");
    plan.memory.frames_in_flight = r.get<int>(memory, "frames_in_flight", "memory");
  }
  plan.predicted = r.prediction(r.need(root, "predicted", "(top)"), "predicted");
  const YAML::Node cands = r.seq(root, "candidates", "(top)", false);
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const std::string f = "candidates[" + std::to_string(i) + "]";
    PlanCandidate c;
    c.strategy = r.get<std::string>(cands[i], "strategy", f);
    if (cands[i]["inner_strategy"]) {
      c.inner_strategy = r.get<std::string>(cands[i], "inner_strategy", f);
      c.replicas = r.get<int>(cands[i], "replicas", f);
    }
    if (cands[i]["not_possible"]) {
      c.note = r.get<std::string>(cands[i], "not_possible", f);
    } else {
      c.predicted = r.prediction(cands[i], f);
    }
    plan.candidates.push_back(std::move(c));
  }
  const YAML::Node frags = r.seq(root, "fragments", "(top)");
  for (std::size_t i = 0; i < frags.size(); ++i) {
    const std::string f = "fragments[" + std::to_string(i) + "]";
    const YAML::Node& node = frags[i];
    r.only(node,
           {"name", "role", "file", "sha256", "nodes", "branches", "inputs", "outputs", "cost",
            "oracle", "compiled"},
           f);
    PlanFragment pf;
    pf.name = r.get<std::string>(node, "name", f);
    pf.role = r.get<std::string>(node, "role", f);
    pf.file = r.get<std::string>(node, "file", f);
    pf.sha256 = r.get<std::string>(node, "sha256", f);
    pf.nodes = r.get<std::vector<int>>(node, "nodes", f);
    pf.branches = r.get_or<std::vector<std::string>>(node, "branches", f, {});
    pf.inputs = r.tensors(node, "inputs", f);
    pf.outputs = r.tensors(node, "outputs", f);
    const YAML::Node c = r.need(node, "cost", f);
    pf.cost.ops = r.get<std::int64_t>(c, "ops", f + ".cost");
    pf.cost.macs = r.get<std::int64_t>(c, "macs", f + ".cost");
    pf.cost.params = r.get<std::int64_t>(c, "params", f + ".cost");
    pf.cost.weight_bytes = r.get<std::int64_t>(c, "weight_bytes", f + ".cost");
    pf.cost.compute_ms = r.get<double>(c, "compute_ms", f + ".cost");
    pf.cost.memory_bytes = r.get_or<std::int64_t>(c, "memory_bytes", f + ".cost", 0);
    const YAML::Node o = r.need(node, "oracle", f);
    pf.oracle_verdict = r.get<std::string>(o, "verdict", f + ".oracle");
    pf.dpu_subgraphs = r.get<int>(o, "dpu_subgraphs", f + ".oracle");
    const YAML::Node findings = r.seq(o, "findings", f + ".oracle", false);
    for (std::size_t k = 0; k < findings.size(); ++k) {
      const std::string ff = f + ".oracle.findings[" + std::to_string(k) + "]";
      pf.oracle_findings.push_back({r.get<std::string>(findings[k], "op", ff),
                                    r.get<std::string>(findings[k], "rule", ff),
                                    r.get<std::string>(findings[k], "verdict", ff),
                                    r.get<std::string>(findings[k], "reason", ff)});
    }
    if (node["compiled"]) {
      const std::string fc = f + ".compiled";
      const YAML::Node c2 = r.need(node, "compiled", f);
      r.only(c2, {"file", "sha256", "dpu_fingerprint"}, fc);
      PlanCompiled compiled;
      compiled.file = r.get<std::string>(c2, "file", fc);
      compiled.sha256 = r.get<std::string>(c2, "sha256", fc);
      try {
        compiled.dpu_fingerprint =
            parse_fingerprint(r.get<std::string>(c2, "dpu_fingerprint", fc), "value");
      } catch (const Error& e) {
        r.fail(fc + ".dpu_fingerprint", e.what());
      }
      if (compiled.dpu_fingerprint == 0) r.fail(fc + ".dpu_fingerprint", "must not be 0");
      pf.compiled = std::move(compiled);
    }
    plan.fragments.push_back(std::move(pf));
  }
  const YAML::Node edges = r.seq(root, "edges", "(top)");
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const std::string f = "edges[" + std::to_string(i) + "]";
    r.only(edges[i], {"from", "output", "to", "input", "bytes"}, f);
    plan.edges.push_back(
        {r.get<std::string>(edges[i], "from", f), r.get<std::string>(edges[i], "output", f),
         r.get<std::string>(edges[i], "to", f), r.get<std::string>(edges[i], "input", f),
         r.get<std::int64_t>(edges[i], "bytes", f)});
  }
  const YAML::Node adjustments = r.seq(root, "adjustments", "(top)", false);
  for (std::size_t i = 0; i < adjustments.size(); ++i) {
    const std::string f = "adjustments[" + std::to_string(i) + "]";
    plan.adjustments.push_back({r.get<std::string>(adjustments[i], "kind", f),
                                r.get<std::string>(adjustments[i], "at", f),
                                r.get<std::string>(adjustments[i], "to", f),
                                r.get<std::string>(adjustments[i], "reason", f)});
  }
  // The plan in itself first: a duplicate fragment name is reported as such, not as
  // the slot that then seems not to match.
  try {
    check_plan(plan);
  } catch (const Error& e) {
    throw Error("plan " + origin + ": " + e.what());
  }
  // Slots are derived; when present they must agree with the fragments' nodes.
  const YAML::Node slots = r.seq(root, "slots", "(top)", false);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const std::string f = "slots[" + std::to_string(i) + "]";
    const int node = r.get<int>(slots[i], "node", f);
    const auto names = r.get<std::vector<std::string>>(slots[i], "fragments", f);
    for (const auto& name : names) {
      bool ok = false;
      for (const auto& pf : plan.fragments)
        if (pf.name == name)
          for (int k : pf.nodes) ok = ok || k == node;
      if (!ok) r.fail(f, "fragment '" + name + "' does not list node " + std::to_string(node));
    }
  }
  return plan;
}

Plan read_plan(const std::filesystem::path& dir_or_file) {
  const auto file =
      std::filesystem::is_directory(dir_or_file) ? dir_or_file / "plan.yaml" : dir_or_file;
  return plan_from_yaml(read_regular_file(file, "plan " + file.string()), file.string());
}

}  // namespace dpushard
