// The verdict of a compiled xmodel, read from its subgraph placement (oracle_learn.hpp).
#include <algorithm>
#include <functional>
#include <set>

#include "dpushard/oracle_learn.hpp"

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

}  // namespace

CompiledVerdict judge_compiled(const Graph& compiled, const Oracle& base,
                               const std::string& origin) {
  const auto& root = compiled.root();
  bool has_devices = false;
  if (root)
    for (const auto& c : root->children) has_devices = has_devices || !c.device().empty();
  if (!has_devices)
    throw Error(origin +
                ": not a compiled xmodel (no subgraphs with a device attribute): give "
                "vai_c_xir output, not an _int file");

  // Where each op went: its root child's device and index.
  struct Where {
    std::string device;
    std::size_t subgraph = 0;
  };
  std::map<std::string, Where, std::less<>> where;
  CompiledVerdict result;
  std::vector<std::string> subgraph_names;
  for (const auto& child : root->children) {
    std::vector<std::string> ops;
    collect_ops(child, ops);
    const std::string device = child.device();
    const std::size_t index = subgraph_names.size();
    subgraph_names.push_back(child.name);
    bool moves_or_computes = false;
    for (const auto& name : ops) {
      where[name] = {device, index};
      const Op* op = compiled.find(name);
      if (op != nullptr && !is_plumbing(oracle_type(*op))) moves_or_computes = true;
    }
    if (device == "DPU") ++result.dpu_subgraphs;
    if (device == "CPU" && moves_or_computes) ++result.cpu_subgraphs;
  }

  // The same graph under the `_int` type names, so the base oracle can name the rule that
  // sends an op to the CPU (its limits read the same attributes).
  Graph normalized = compiled;
  for (auto& op : normalized.mutable_ops()) op.type = oracle_type(op);

  // Ops between an output that is not fixed and the nearest fixed value.
  std::set<std::string> trailing;
  std::function<void(const Op&)> walk = [&](const Op& op) {
    if (produces_fixed(op) || !trailing.insert(op.name).second) return;
    for (const auto& p : op.all_producers())
      if (const Op* producer = compiled.find(p)) walk(*producer);
  };
  for (const Op* out : compiled.outputs()) walk(*out);

  auto add = [&](CompiledFinding f) {
    result.verdict = std::max(result.verdict, f.verdict);
    result.findings.push_back(std::move(f));
  };
  for (const Op& op : compiled.ops()) {
    const auto it = where.find(op.name);
    if (it == where.end() || it->second.device != "CPU") continue;
    const Op& nop = normalized.op(op.name);
    if (is_plumbing(nop.type)) continue;
    const std::string at = nop.type + " '" + op.name + "' (" + op.type + ") is in CPU subgraph '" +
                           subgraph_names[it->second.subgraph] + "'";
    if (is_layout_op(nop.type)) {
      add({op.name, nop.type, "data_movement", Verdict::DpuBoundary, at + ": data movement only"});
      continue;
    }
    CompiledFinding f{op.name, nop.type, "", Verdict::Cpu, ""};
    if (trailing.count(op.name)) {
      f.rule = "output_not_fixed";
      f.reason = at + ": between an output without a fix and the nearest fix";
    } else {
      const Placement p = base.place(normalized, nop);
      if (p.device == Device::Cpu) {
        f.rule = p.rule;
        f.reason = at + ": oracle " + base.name() + " rule " + p.rule + ": " + p.reason;
      } else {
        f.rule = "unexplained";
        f.reason = at + ": no rule of oracle " + base.name() + " sends it to the CPU";
      }
    }
    add(std::move(f));
  }

  if (result.dpu_subgraphs > 1) {
    add({"", "", "several_dpu_subgraphs", Verdict::DpuBoundary,
         std::to_string(result.dpu_subgraphs) + " DPU subgraphs"});
  }
  // A DPU value that leaves its subgraph (directly or through a download) and is also used
  // inside it: the compiler kept it as an extra output (output_ops).
  for (const Op& op : compiled.ops()) {
    const auto it = where.find(op.name);
    if (it == where.end() || it->second.device != "DPU" || op.type == "download" ||
        op.type == "const-fix" || op.type == "const")
      continue;
    bool inside = false, leaves = false;
    for (const Op* c : compiled.consumers(op.name)) {
      const auto ct = where.find(c->name);
      const bool same = ct != where.end() && ct->second.device == "DPU" &&
                        ct->second.subgraph == it->second.subgraph;
      if (!same || c->type == "download") {
        leaves = true;
      } else {
        inside = true;
      }
    }
    if (inside && leaves)
      add({op.name, oracle_type(op), "output_consumed_inside", Verdict::DpuBoundary,
           oracle_type(op) + " '" + op.name + "' leaves DPU subgraph '" +
               subgraph_names[it->second.subgraph] + "' and is also used inside it"});
  }
  return result;
}

}  // namespace dpushard
