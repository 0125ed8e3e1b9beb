// Where the DPU compiler places ops, by the oracle's rules (see oracle.hpp).
#include "dpushard/split/oracle.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "dpushard/graph/window.hpp"
#include "op_classes.hpp"

namespace dpushard {
namespace {

std::string range_text(const std::pair<std::int64_t, std::int64_t>& r) {
  return std::to_string(r.first) + "-" + std::to_string(r.second);
}

bool in_range(std::int64_t v, const std::pair<std::int64_t, std::int64_t>& r) {
  return v >= r.first && v <= r.second;
}

std::int64_t input_channels(const Graph& graph, const Op& op) {
  const auto& in = op.producers("input");
  if (in.empty()) return 0;
  const Op* p = graph.find(in.front());
  return (p == nullptr || p->output.shape.empty()) ? 0 : p->output.shape.back();
}

// {kh, kw} of a conv or pool; a global pool's kernel is its input's spatial size.
// The op's window, a global pool's resolved to its input's extent (and stride 1: one
// window, so the DPU's stride limit does not apply).
Window window_for_rules(const Graph& graph, const Op& op) {
  Window w = window_of(op);
  if (!w.global) return w;
  const auto& in = op.producers("input");
  const Op* p = in.empty() ? nullptr : graph.find(in.front());
  if (p != nullptr && p->output.shape.size() == 4)
    w = w.over(p->output.shape[1], p->output.shape[2]);
  w.stride_h = w.stride_w = 1;
  return w;
}

// A value that depends on no `data` op (weights and what only combines them).
bool is_constant_value(const Graph& graph, const std::string& name, int depth = 0) {
  const Op* op = graph.find(name);
  if (op == nullptr || op->type == "data" || depth > 64) return false;
  for (const auto& p : op->all_producers())
    if (!is_constant_value(graph, p, depth + 1)) return false;
  return true;
}

Placement moved(const DpuOpRule& rule, const Op& op, const std::string& limit,
                const std::string& what) {
  const Device to = rule.device == Device::Dpu ? Device::Cpu : Device::Dpu;
  std::string reason =
      op.type + " '" + op.name + "': " + what + ": runs on the " + std::string(device_name(to));
  if (!rule.source.empty()) reason += " (" + rule.source + ")";
  return {to, op.type + "." + limit, reason};
}

// Marks trailing ops of an unfixed output: from `op` back to the nearest fix ops.
void trailing_ops(const Graph& graph, const split::OpClasses& classes, std::size_t op,
                  std::vector<std::size_t>& out) {
  if (std::find(out.begin(), out.end(), op) != out.end()) return;
  const Op& o = graph.ops()[op];
  if (classes.constant[op] || o.type == "fix" || o.type == "data") return;
  out.push_back(op);
  for (const auto& p : o.all_producers())
    trailing_ops(graph, classes, split::op_index(graph, p), out);
}

}  // namespace

std::string_view verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::Dpu:
      return "dpu";
    case Verdict::DpuBoundary:
      return "dpu+boundary";
    case Verdict::Cpu:
      break;
  }
  return "cpu";
}

Verdict parse_verdict(std::string_view text) {
  for (const Verdict v : {Verdict::Dpu, Verdict::DpuBoundary, Verdict::Cpu})
    if (text == verdict_name(v)) return v;
  throw Error("unknown verdict '" + std::string(text) + "' (known: dpu, dpu+boundary, cpu)");
}

const std::string& Oracle::boundary_source(std::string_view rule) const {
  auto it = boundary_sources_.find(rule);
  if (it == boundary_sources_.end())
    throw Error("oracle: no boundary rule '" + std::string(rule) + "'");
  return it->second;
}

std::optional<Verdict> Oracle::expected(std::string_view micro_model) const {
  auto it = expected_.find(micro_model);
  if (it == expected_.end()) return std::nullopt;
  return it->second;
}

Placement Oracle::place(const Graph& graph, const Op& op) const {
  auto it = rules_.find(op.type);
  if (it == rules_.end()) {
    return {unknown_device_, "unknown_ops",
            op.type + " '" + op.name + "': op type not in the oracle: assumed on the " +
                std::string(device_name(unknown_device_))};
  }
  const DpuOpRule& rule = it->second;
  if (rule.device == Device::Cpu) {
    std::string reason = op.type + " '" + op.name + "': a CPU op on this DPU";
    if (!rule.source.empty()) reason += " (" + rule.source + ")";
    return {Device::Cpu, op.type, reason};
  }
  if (rule.kernel || rule.square) {
    const Window w = window_for_rules(graph, op);
    const auto kh = w.kernel_h, kw = w.kernel_w;
    const std::string k = std::to_string(kh) + "x" + std::to_string(kw);
    if (rule.kernel && (!in_range(kh, *rule.kernel) || !in_range(kw, *rule.kernel)))
      return moved(rule, op, "kernel", "kernel " + k + " is beyond " + range_text(*rule.kernel));
    if (rule.square && kh != kw) return moved(rule, op, "square", "kernel " + k + " is not square");
  }
  if (rule.stride) {
    const Window w = window_for_rules(graph, op);
    const auto sh = w.stride_h, sw = w.stride_w;
    if (!in_range(sh, *rule.stride) || !in_range(sw, *rule.stride))
      return moved(rule, op, "stride",
                   "stride " + std::to_string(sh) + "x" + std::to_string(sw) + " is beyond " +
                       range_text(*rule.stride));
  }
  const std::int64_t ic = input_channels(graph, op);
  if (rule.out_channels && !op.output.shape.empty() &&
      !in_range(op.output.shape.back(), *rule.out_channels))
    return moved(rule, op, "out_channels",
                 std::to_string(op.output.shape.back()) + " output channels is beyond " +
                     range_text(*rule.out_channels));
  if (rule.kernel_channel_budget) {
    const Window w = window_for_rules(graph, op);
    const std::int64_t load = w.kernel_h * w.kernel_w * ((ic + 15) / 16);
    if (load > *rule.kernel_channel_budget)
      return moved(rule, op, "kernel_channel_budget",
                   "kw*kh*ceil(ic/16) = " + std::to_string(load) + " is above " +
                       std::to_string(*rule.kernel_channel_budget));
  }
  if (!rule.groups.empty()) {
    const std::int64_t group = int_attr(op.attrs, "group", 1);
    const bool depthwise =
        group > 1 && group == ic && !op.output.shape.empty() && op.output.shape.back() % group == 0;
    bool allowed = false;
    for (std::int64_t g : rule.groups) allowed = allowed || g == group || (g == -1 && depthwise);
    if (!allowed)
      return moved(rule, op, "groups", "group " + std::to_string(group) + " is not supported");
  }
  if (!rule.alphas.empty()) {
    const double alpha = float_attr(op.attrs, "alpha", 0.0);
    bool allowed = false;
    for (double a : rule.alphas) allowed = allowed || std::fabs(a - alpha) < 1e-6;
    if (!allowed) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", alpha);
      return moved(rule, op, "alpha", std::string("slope ") + buf + " is not supported");
    }
  }
  if (rule.const_operand) {
    bool has_const = false;
    for (const auto& p : op.producers("input"))
      has_const = has_const || is_constant_value(graph, p);
    for (const auto& p : op.producers("weights"))
      has_const = has_const || is_constant_value(graph, p);
    if (!has_const) return moved(rule, op, "const_operand", "no constant operand to become a conv");
  }
  return {Device::Dpu, "", ""};
}

FragmentVerdict Oracle::judge(const Graph& fragment) const {
  const auto classes = split::classify_ops(fragment);
  const auto& ops = fragment.ops();
  FragmentVerdict result;
  auto add = [&](OracleFinding f) {
    result.verdict = std::max(result.verdict, f.verdict);
    result.findings.push_back(std::move(f));
  };
  std::vector<std::optional<Device>> device(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!split::is_placeable(ops[i], classes.constant[i])) continue;
    Placement p = place(fragment, ops[i]);
    device[i] = p.device;
    result.placements[ops[i].name] = p;
  }
  // Boundary rules on the fragment's outputs.
  for (std::size_t o : split::model_output_indices(fragment, classes)) {
    const Op& out = ops[o];
    if (out.type == "fix") {
      // The value is used inside when the op before this fix (a float op, or the fix
      // whose int8 value this one re-states) feeds anything else.
      const auto& in = out.producers("input");
      if (in.size() == 1 && fragment.consumers(in.front()).size() > 1) {
        add({out.name, "output_consumed_inside", Verdict::DpuBoundary,
             "output '" + out.name +
                 "' is also used inside the fragment: compile with "
                 "--options '{\"output_ops\": \"" +
                 out.name + "\"}' (" + boundary_sources_.at("output_consumed_inside") + ")"});
      }
      continue;
    }
    std::vector<std::size_t> trailing;
    trailing_ops(fragment, classes, o, trailing);
    for (std::size_t t : trailing) {
      const Op& op = ops[t];
      const bool moves_data = is_layout_op(op.type);
      device[t] = Device::Cpu;
      const std::string reason = "output '" + out.name +
                                 "' is not produced by a fix op: " + op.type + " '" + op.name +
                                 "' runs on the CPU" + (moves_data ? " (data movement only)" : "") +
                                 " (" + boundary_sources_.at("output_not_fixed") + ")";
      result.placements[op.name] = {Device::Cpu, "output_not_fixed", reason};
      add({op.name, "output_not_fixed", moves_data ? Verdict::DpuBoundary : Verdict::Cpu, reason});
    }
  }
  // Ops the rules themselves send to the CPU.
  for (const auto& [name, p] : result.placements) {
    if (p.device != Device::Cpu || p.rule == "output_not_fixed") continue;
    const bool moves_data = is_layout_op(fragment.op(name).type);
    add({name, p.rule, moves_data ? Verdict::DpuBoundary : Verdict::Cpu, p.reason});
  }
  // Subgraphs: connected ops on the same device (a fix joins its producer's device).
  std::vector<std::size_t> parent(ops.size());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (std::size_t i : fragment.topological_order()) {
    if (device[i] || ops[i].type != "fix" || classes.constant[i]) continue;
    const auto& in = ops[i].producers("input");
    if (in.size() == 1) {
      const std::size_t p = split::op_index(fragment, in.front());
      device[i] = device[p];
      if (device[p]) parent[find(i)] = find(p);
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!device[i]) continue;
    for (const auto& pn : ops[i].all_producers()) {
      const std::size_t p = split::op_index(fragment, pn);
      if (device[p] && *device[p] == *device[i]) parent[find(i)] = find(p);
    }
  }
  std::vector<std::size_t> roots_dpu, roots_cpu;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!device[i] || ops[i].type == "fix") continue;
    auto& roots = *device[i] == Device::Dpu ? roots_dpu : roots_cpu;
    const std::size_t r = find(i);
    if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  }
  result.dpu_subgraphs = static_cast<int>(roots_dpu.size());
  result.cpu_subgraphs = static_cast<int>(roots_cpu.size());
  if (result.dpu_subgraphs > 1) {
    add({"", "several_dpu_subgraphs", Verdict::DpuBoundary,
         std::to_string(result.dpu_subgraphs) +
             " DPU subgraphs: the fragment needs graph_runner, not a single DPU runner (" +
             boundary_sources_.at("several_dpu_subgraphs") + ")"});
  }
  return result;
}

}  // namespace dpushard
