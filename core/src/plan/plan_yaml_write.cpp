// plan.yaml, writing: yaml-cpp's emitter, in the order and with the comments docs/plan.md
// shows. Its reader is plan_yaml_read.cpp.
#include <yaml-cpp/yaml.h>

#include <charconv>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/exec/backend.hpp"  // fingerprint_text
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/plan/strategy_table.hpp"

namespace dpushard {
namespace {

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

void emit_cost_model(YAML::Emitter& out, const Plan& plan) {
  out << YAML::Key << "cost_model" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << plan.cost_model;
  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : plan.cost_parameters) out << YAML::Key << k << YAML::Value << number(v);
  out << YAML::EndMap << YAML::EndMap;
}

void emit_memory(YAML::Emitter& out, const PlanMemory& memory) {
  out << YAML::Key << "memory" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "budget_bytes" << YAML::Value << memory.budget_bytes;
  out << YAML::Key << "board" << YAML::Value << memory.board;
  out << YAML::Key << "frames_in_flight" << YAML::Value << memory.frames_in_flight;
  if (!memory.node_budget_bytes.empty())
    out << YAML::Key << "node_budget_bytes" << YAML::Value << YAML::Flow
        << memory.node_budget_bytes;
  out << YAML::EndMap;
}

void emit_candidate(YAML::Emitter& out, const PlanCandidate& c) {
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

// Node slots: which fragments each node runs (derived from the fragments' nodes).
void emit_slots(YAML::Emitter& out, const Plan& plan) {
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
}

void emit_fragment_cost(YAML::Emitter& out, const PlanFragmentCost& cost) {
  out << YAML::Key << "cost" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "ops" << YAML::Value << cost.ops;
  out << YAML::Key << "macs" << YAML::Value << cost.macs;
  out << YAML::Key << "params" << YAML::Value << cost.params;
  out << YAML::Key << "weight_bytes" << YAML::Value << cost.weight_bytes;
  out << YAML::Key << "compute_ms" << YAML::Value << number(cost.compute_ms);
  if (cost.memory_bytes > 0) out << YAML::Key << "memory_bytes" << YAML::Value << cost.memory_bytes;
  if (cost.frame_ms > 0) {
    out << YAML::Key << "work_macs" << YAML::Value << number(cost.work_macs);
    out << YAML::Key << "dpu_macs" << YAML::Value << number(cost.dpu_macs);
    out << YAML::Key << "dpu_ms" << YAML::Value << number(cost.dpu_ms);
    out << YAML::Key << "frame_ms" << YAML::Value << number(cost.frame_ms);
  }
  out << YAML::EndMap;
}

void emit_fragment_oracle(YAML::Emitter& out, const PlanFragment& f) {
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
}

void emit_compiled(YAML::Emitter& out, const PlanCompiled& compiled) {
  out << YAML::Key << "compiled" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "file" << YAML::Value << compiled.file;
  out << YAML::Key << "sha256" << YAML::Value << compiled.sha256;
  out << YAML::Key << "dpu_fingerprint" << YAML::Value
      << fingerprint_text(compiled.dpu_fingerprint);
  out << YAML::EndMap;
}

void emit_fragment(YAML::Emitter& out, const PlanFragment& f) {
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << f.name;
  out << YAML::Key << "role" << YAML::Value << f.role;
  out << YAML::Key << "file" << YAML::Value << f.file;
  out << YAML::Key << "sha256" << YAML::Value << f.sha256;
  out << YAML::Key << "nodes" << YAML::Value << YAML::Flow << f.nodes;
  if (!f.branches.empty()) out << YAML::Key << "branches" << YAML::Value << f.branches;
  emit_tensors(out, "inputs", f.inputs);
  emit_tensors(out, "outputs", f.outputs);
  emit_fragment_cost(out, f.cost);
  emit_fragment_oracle(out, f);
  if (f.compiled) emit_compiled(out, *f.compiled);
  out << YAML::EndMap;
}

void emit_edge(YAML::Emitter& out, const PlanEdge& e) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "from" << YAML::Value << e.from;
  out << YAML::Key << "output" << YAML::Value << e.output;
  out << YAML::Key << "to" << YAML::Value << e.to;
  out << YAML::Key << "input" << YAML::Value << e.input;
  out << YAML::Key << "bytes" << YAML::Value << e.bytes;
  out << YAML::EndMap;
}

void emit_adjustment(YAML::Emitter& out, const PlanAdjustment& a) {
  out << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << a.kind;
  out << YAML::Key << "at" << YAML::Value << a.at;
  out << YAML::Key << "to" << YAML::Value << a.to;
  out << YAML::Key << "reason" << YAML::Value << a.reason;
  out << YAML::EndMap;
}

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
  if (strategy_is_composite(plan.strategy)) {
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
  if (!plan.node_targets.empty())
    out << YAML::Key << "node_targets" << YAML::Value << YAML::Flow << plan.node_targets;
  if (!plan.frame_share.empty())
    out << YAML::Key << "frame_share" << YAML::Value << YAML::Flow << plan.frame_share;
  out << YAML::Key << "output_fix" << YAML::Value << plan.output_fix;
  out << YAML::Key << "link_gbps" << YAML::Value << number(plan.link_gbps);
  emit_cost_model(out, plan);
  out << YAML::Key << "oracle" << YAML::Value << plan.oracle;
  out << YAML::Key << "structure" << YAML::Value << plan.structure;
  if (plan.memory.budget_bytes > 0) emit_memory(out, plan.memory);
  out << YAML::Key << "predicted" << YAML::Value << YAML::BeginMap;
  emit_prediction(out, plan.predicted);
  out << YAML::EndMap;
  out << YAML::Key << "candidates" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : plan.candidates) emit_candidate(out, c);
  out << YAML::EndSeq;
  emit_slots(out, plan);
  out << YAML::Key << "fragments" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : plan.fragments) emit_fragment(out, f);
  out << YAML::EndSeq;
  out << YAML::Key << "edges" << YAML::Value << YAML::BeginSeq;
  for (const auto& e : plan.edges) emit_edge(out, e);
  out << YAML::EndSeq;
  out << YAML::Key << "adjustments" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : plan.adjustments) emit_adjustment(out, a);
  out << YAML::EndSeq;
  out << YAML::EndMap;
  if (!out.good()) throw Error("plan: cannot emit YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

void write_plan(const Plan& plan, const std::filesystem::path& dir) {
  write_file_atomically(dir / "plan.yaml", plan_to_yaml(plan));
}

}  // namespace dpushard
