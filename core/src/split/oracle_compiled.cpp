// The verdict of a compiled xmodel, read from its subgraph placement (oracle_learn.hpp).
#include <algorithm>
#include <functional>
#include <set>

#include "dpushard/split/oracle_learn.hpp"

namespace dpushard {
namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The `_int` type an oracle rule is written for: conv2d-fix -> conv2d, pool-fix MAX ->
// maxpool2d, eltwise-fix MUL -> mul, data-fix -> data, ...
std::string oracle_type(const Op& op) {
  const std::string& t = op.type;
  if (t == "pool-fix") {
    const auto* type = find_attr<std::string>(op.attrs, "type");
    return (type != nullptr && *type == "MAX") ? "maxpool2d" : "avgpool2d";
  }
  if (t == "eltwise-fix") {
    const auto* type = find_attr<std::string>(op.attrs, "type");
    return (type != nullptr && *type == "MUL") ? "mul" : "add";
  }
  if (t == "reshape-fix") return "reshape";
  if (ends_with(t, "-fix")) return t.substr(0, t.size() - 4);
  return t;
}

// Ops that neither compute nor rearrange: inputs, weights, quantize steps, DMA.
bool is_plumbing(std::string_view type) {
  return type == "data" || type == "const" || type == "fix" || type == "fix2float" ||
         type == "float2fix" || type == "upload" || type == "download";
}

// An op whose output is int8 on the fix grid: where a walk back from an output stops.
bool produces_fixed(const Op& op) {
  return ends_with(op.type, "-fix") || op.type == "fix" || op.type == "float2fix" ||
         op.type == "fix2float" || op.type == "data" || op.type == "const";
}

void collect_ops(const Subgraph& s, std::vector<std::string>& out) {
  out.insert(out.end(), s.ops.begin(), s.ops.end());
  for (const auto& c : s.children) collect_ops(c, out);
}

// Where each op of a compiled file went: its root child's device and index.
struct Where {
  std::string device;
  std::size_t subgraph = 0;
};

struct SubgraphPlacement {
  std::map<std::string, Where, std::less<>> where;  // by op name
  std::vector<std::string> names;                   // the root's children, in order

  const Where* of(const std::string& op) const {
    const auto it = where.find(op);
    return it == where.end() ? nullptr : &it->second;
  }
};

// Throws naming `origin` unless the file has subgraphs with a device attribute.
void require_compiled(const Graph& compiled, const std::string& origin) {
  const auto& root = compiled.root();
  bool has_devices = false;
  if (root)
    for (const auto& c : root->children) has_devices = has_devices || !c.device().empty();
  if (!has_devices)
    throw Error(origin +
                ": not a compiled xmodel (no subgraphs with a device attribute): give "
                "vai_c_xir output, not an _int file");
}

// Each op's subgraph; counts the DPU subgraphs and the CPU ones that compute or move data.
SubgraphPlacement place_ops(const Graph& compiled, CompiledVerdict& result) {
  SubgraphPlacement placement;
  for (const auto& child : compiled.root()->children) {
    std::vector<std::string> ops;
    collect_ops(child, ops);
    const std::string device = child.device();
    const std::size_t index = placement.names.size();
    placement.names.push_back(child.name);
    bool moves_or_computes = false;
    for (const auto& name : ops) {
      placement.where[name] = {device, index};
      const Op* op = compiled.find(name);
      if (op != nullptr && !is_plumbing(oracle_type(*op))) moves_or_computes = true;
    }
    if (device == "DPU") ++result.dpu_subgraphs;
    if (device == "CPU" && moves_or_computes) ++result.cpu_subgraphs;
  }
  return placement;
}

// Ops between an output that is not fixed and the nearest fixed value.
std::set<std::string> trailing_ops(const Graph& compiled) {
  std::set<std::string> trailing;
  std::function<void(const Op&)> walk = [&](const Op& op) {
    if (produces_fixed(op) || !trailing.insert(op.name).second) return;
    for (const auto& p : op.all_producers())
      if (const Op* producer = compiled.find(p)) walk(*producer);
  };
  for (const Op* out : compiled.outputs()) walk(*out);
  return trailing;
}

void add_finding(CompiledVerdict& result, CompiledFinding f) {
  result.verdict = std::max(result.verdict, f.verdict);
  result.findings.push_back(std::move(f));
}

// Why a computing op sits on the CPU: an unfixed output behind it, or the base oracle's
// rule, or nothing the oracle knows.
CompiledFinding cpu_finding(const Op& op, const Op& nop, const std::string& at, bool trailing,
                            const Graph& normalized, const Oracle& base) {
  CompiledFinding f{op.name, nop.type, "", Verdict::Cpu, ""};
  if (trailing) {
    f.rule = "output_not_fixed";
    f.reason = at + ": between an output without a fix and the nearest fix";
    return f;
  }
  const Placement p = base.place(normalized, nop);
  if (p.device == Device::Cpu) {
    f.rule = p.rule;
    f.reason = at + ": oracle " + base.name() + " rule " + p.rule + ": " + p.reason;
  } else {
    f.rule = "unexplained";
    f.reason = at + ": no rule of oracle " + base.name() + " sends it to the CPU";
  }
  return f;
}

// A finding for every op in a CPU subgraph that computes or moves data.
void add_cpu_findings(const Graph& compiled, const SubgraphPlacement& placement, const Oracle& base,
                      CompiledVerdict& result) {
  // The same graph under the `_int` type names, so the base oracle can name the rule that
  // sends an op to the CPU (its limits read the same attributes).
  Graph normalized = compiled;
  for (auto& op : normalized.mutable_ops()) op.type = oracle_type(op);
  const std::set<std::string> trailing = trailing_ops(compiled);
  for (const Op& op : compiled.ops()) {
    const Where* w = placement.of(op.name);
    if (w == nullptr || w->device != "CPU") continue;
    const Op& nop = normalized.op(op.name);
    if (is_plumbing(nop.type)) continue;
    const std::string at = nop.type + " '" + op.name + "' (" + op.type + ") is in CPU subgraph '" +
                           placement.names[w->subgraph] + "'";
    if (is_layout_op(nop.type)) {
      add_finding(result, {op.name, nop.type, "data_movement", Verdict::DpuBoundary,
                           at + ": data movement only"});
      continue;
    }
    add_finding(result, cpu_finding(op, nop, at, trailing.count(op.name) != 0, normalized, base));
  }
}

// A DPU value that leaves its subgraph (directly or through a download) and is also used
// inside it: the compiler kept it as an extra output (output_ops).
void add_outputs_consumed_inside(const Graph& compiled, const SubgraphPlacement& placement,
                                 CompiledVerdict& result) {
  for (const Op& op : compiled.ops()) {
    const Where* w = placement.of(op.name);
    if (w == nullptr || w->device != "DPU" || op.type == "download" || op.type == "const-fix" ||
        op.type == "const")
      continue;
    bool inside = false, leaves = false;
    for (const Op* c : compiled.consumers(op.name)) {
      const Where* cw = placement.of(c->name);
      const bool same = cw != nullptr && cw->device == "DPU" && cw->subgraph == w->subgraph;
      if (!same || c->type == "download") {
        leaves = true;
      } else {
        inside = true;
      }
    }
    if (inside && leaves)
      add_finding(result, {op.name, oracle_type(op), "output_consumed_inside", Verdict::DpuBoundary,
                           oracle_type(op) + " '" + op.name + "' leaves DPU subgraph '" +
                               placement.names[w->subgraph] + "' and is also used inside it"});
  }
}

}  // namespace

CompiledVerdict judge_compiled(const Graph& compiled, const Oracle& base,
                               const std::string& origin) {
  require_compiled(compiled, origin);
  CompiledVerdict result;
  const SubgraphPlacement placement = place_ops(compiled, result);
  add_cpu_findings(compiled, placement, base, result);
  if (result.dpu_subgraphs > 1) {
    add_finding(result, {"", "", "several_dpu_subgraphs", Verdict::DpuBoundary,
                         std::to_string(result.dpu_subgraphs) + " DPU subgraphs"});
  }
  add_outputs_consumed_inside(compiled, placement, result);
  return result;
}

}  // namespace dpushard
