// Reading oracle files (schema in docs/splitting.md).
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "dpushard/oracle.hpp"
#include "oracle_builtin.hpp"

namespace dpushard {
namespace {

const char* const kBoundaryRules[] = {"output_not_fixed", "output_consumed_inside",
                                      "several_dpu_subgraphs"};

[[noreturn]] void fail(const std::string& origin, const std::string& field,
                       const std::string& what) {
  throw Error("oracle " + origin + ": " + field + ": " + what);
}

Device parse_device(const YAML::Node& node, const std::string& origin, const std::string& field) {
  const std::string text = node.IsScalar() ? node.Scalar() : "";
  if (text == "DPU") return Device::Dpu;
  if (text == "CPU") return Device::Cpu;
  fail(origin, field, "expected DPU or CPU, got '" + text + "'");
}

template <typename T>
T scalar(const YAML::Node& node, const std::string& origin, const std::string& field) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    fail(origin, field, "not a valid value");
  }
}

std::pair<std::int64_t, std::int64_t> range(const YAML::Node& node, const std::string& origin,
                                            const std::string& field) {
  if (!node.IsSequence() || node.size() != 2) fail(origin, field, "expected [min, max]");
  const auto lo = scalar<std::int64_t>(node[0], origin, field);
  const auto hi = scalar<std::int64_t>(node[1], origin, field);
  if (lo > hi) fail(origin, field, "min is above max");
  return {lo, hi};
}

OracleOpRule parse_rule(const YAML::Node& node, const std::string& origin,
                        const std::string& field) {
  if (!node.IsMap()) fail(origin, field, "expected a map with 'device'");
  OracleOpRule rule;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string f = field + "." + key;
    if (key == "device") {
      rule.device = parse_device(kv.second, origin, f);
    } else if (key == "source") {
      rule.source = scalar<std::string>(kv.second, origin, f);
    } else if (key == "limits") {
      if (!kv.second.IsMap()) fail(origin, f, "expected a map");
      for (const auto& lim : kv.second) {
        const std::string name = lim.first.Scalar();
        const std::string lf = f + "." + name;
        const YAML::Node& v = lim.second;
        if (name == "kernel") {
          rule.kernel = range(v, origin, lf);
        } else if (name == "stride") {
          rule.stride = range(v, origin, lf);
        } else if (name == "out_channels") {
          rule.out_channels = range(v, origin, lf);
        } else if (name == "kernel_channel_budget") {
          rule.kernel_channel_budget = scalar<std::int64_t>(v, origin, lf);
        } else if (name == "square") {
          rule.square = scalar<bool>(v, origin, lf);
        } else if (name == "const_operand") {
          rule.const_operand = scalar<bool>(v, origin, lf);
        } else if (name == "groups") {
          if (!v.IsSequence()) fail(origin, lf, "expected a list");
          for (const auto& g : v) {
            if (g.IsScalar() && g.Scalar() == "depthwise") {
              rule.groups.push_back(-1);  // group == channels
            } else {
              rule.groups.push_back(scalar<std::int64_t>(g, origin, lf));
            }
          }
        } else if (name == "alpha") {
          if (!v.IsSequence()) fail(origin, lf, "expected a list");
          for (const auto& a : v) rule.alphas.push_back(scalar<double>(a, origin, lf));
        } else {
          fail(origin, lf,
               "unknown limit (known: kernel, stride, out_channels, "
               "kernel_channel_budget, groups, square, alpha, const_operand)");
        }
      }
    } else {
      fail(origin, f, "unknown key (known: device, limits, source)");
    }
  }
  if (!node["device"]) fail(origin, field, "missing 'device'");
  return rule;
}

}  // namespace

Oracle Oracle::parse(const std::string& yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error("oracle " + origin + ": line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) fail(origin, "(top)", "expected a map");
  Oracle oracle;
  oracle.origin_ = origin;
  oracle.text_ = yaml_text;
  for (const auto& kv : root) {
    const std::string key = kv.first.Scalar();
    if (key == "name") {
      oracle.name_ = scalar<std::string>(kv.second, origin, key);
    } else if (key == "unknown_ops") {
      oracle.unknown_device_ = parse_device(kv.second, origin, key);
    } else if (key == "ops") {
      if (!kv.second.IsMap()) fail(origin, key, "expected a map of op types");
      for (const auto& op : kv.second) {
        const std::string type = op.first.Scalar();
        oracle.rules_[type] = parse_rule(op.second, origin, "ops." + type);
      }
    } else if (key == "boundaries") {
      if (!kv.second.IsMap()) fail(origin, key, "expected a map");
      for (const auto& b : kv.second) {
        const std::string rule = b.first.Scalar();
        const std::string f = "boundaries." + rule;
        bool known = false;
        for (const char* k : kBoundaryRules) known = known || rule == k;
        if (!known)
          fail(origin, f,
               "unknown rule (known: output_not_fixed, output_consumed_inside, "
               "several_dpu_subgraphs)");
        std::string source;
        if (b.second.IsMap() && b.second["source"])
          source = scalar<std::string>(b.second["source"], origin, f + ".source");
        oracle.boundary_sources_[rule] = source;
      }
    } else if (key == "micro_models") {
      if (!kv.second.IsMap()) fail(origin, key, "expected a map of name: verdict");
      for (const auto& m : kv.second) {
        const std::string name = m.first.Scalar();
        const std::string text = m.second.IsScalar() ? m.second.Scalar() : "";
        try {
          oracle.expected_[name] = parse_verdict(text);
        } catch (const Error& e) {
          fail(origin, "micro_models." + name, e.what());
        }
      }
    } else if (key == "learned_from") {
      if (!kv.second.IsMap()) fail(origin, key, "expected a map of key: text");
      for (const auto& p : kv.second)
        oracle.provenance_[p.first.Scalar()] =
            scalar<std::string>(p.second, origin, key + "." + p.first.Scalar());
    } else {
      fail(origin, key,
           "unknown key (known: name, unknown_ops, ops, boundaries, micro_models, "
           "learned_from)");
    }
  }
  if (oracle.name_.empty()) fail(origin, "name", "missing");
  if (oracle.rules_.empty()) fail(origin, "ops", "missing or empty");
  for (const char* k : kBoundaryRules)
    if (!oracle.boundary_sources_.count(k)) fail(origin, std::string("boundaries.") + k, "missing");
  return oracle;
}

Oracle Oracle::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("oracle " + path.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path.string());
}

const Oracle& Oracle::builtin() {
  static const Oracle oracle = parse(split::builtin_oracle_yaml(), "builtin");
  return oracle;
}

}  // namespace dpushard
