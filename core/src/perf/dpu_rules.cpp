// The DPU's op rules (dpushard/perf/dpu_rules.hpp): read from an oracle file's `ops`.
#include "dpushard/perf/dpu_rules.hpp"

#include "builtin_targets.hpp"
#include "dpushard/yaml/yaml_reader.hpp"

namespace dpushard {
namespace {

DpuOpRule read_rule(const yaml::Value& value) {
  const yaml::Map m = value.map({"device", "limits", "source"});
  DpuOpRule rule;
  rule.device = read_device(m.get("device"));
  if (auto source = m.find("source")) rule.source = source->text();
  if (auto limits = m.find("limits")) {
    const yaml::Map l = limits->map({"kernel", "stride", "out_channels", "kernel_channel_budget",
                                     "groups", "square", "alpha", "const_operand"});
    if (auto v = l.find("kernel")) rule.kernel = v->range();
    if (auto v = l.find("stride")) rule.stride = v->range();
    if (auto v = l.find("out_channels")) rule.out_channels = v->range();
    if (auto v = l.find("kernel_channel_budget")) rule.kernel_channel_budget = v->integer();
    if (auto v = l.find("square")) rule.square = v->boolean();
    if (auto v = l.find("const_operand")) rule.const_operand = v->boolean();
    if (auto v = l.find("groups"))
      for (const yaml::Value& g : v->list())
        rule.groups.push_back(g.is_scalar() && g.node().Scalar() == "depthwise"
                                  ? -1  // group == channels
                                  : g.integer());
    if (auto v = l.find("alpha"))
      for (const yaml::Value& a : v->list()) rule.alphas.push_back(a.number());
  }
  return rule;
}

}  // namespace

Device read_device(const yaml::Value& value) {
  return value.choice<Device>({{"DPU", Device::Dpu}, {"CPU", Device::Cpu}});
}

DpuRules read_dpu_rules(const yaml::Map& top) {
  DpuRules rules;
  if (auto unknown = top.find("unknown_ops")) rules.unknown_ops = read_device(*unknown);
  const yaml::Value ops = top.get("ops");
  for (const auto& [type, rule] : ops.open_map().entries()) rules.ops[type] = read_rule(rule);
  if (rules.ops.empty()) ops.fail("no op types");
  return rules;
}

std::string_view builtin_oracle_yaml() { return perf::builtin_oracle_text(); }

const DpuRules& builtin_dpu_rules() {
  static const DpuRules rules = [] {
    const auto doc = yaml::Document::parse(std::string(builtin_oracle_yaml()), "builtin");
    // Only the rules: the oracle (split) checks the rest of the file.
    const yaml::Value root = doc.root();
    return read_dpu_rules(root.open_map());
  }();
  return rules;
}

}  // namespace dpushard
