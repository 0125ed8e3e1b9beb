// Writing a learned oracle and comparing two oracles (oracle_learn.hpp).
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <sstream>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/split/oracle_learn.hpp"

namespace dpushard {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string range_text(const std::optional<std::pair<std::int64_t, std::int64_t>>& r) {
  if (!r) return "none";
  return "[" + std::to_string(r->first) + ", " + std::to_string(r->second) + "]";
}

std::string groups_text(const std::vector<std::int64_t>& groups) {
  if (groups.empty()) return "none";
  std::string s = "[";
  for (std::size_t i = 0; i < groups.size(); ++i)
    s += (i ? ", " : "") + (groups[i] == -1 ? std::string("depthwise") : std::to_string(groups[i]));
  return s + "]";
}

std::string alphas_text(const std::vector<double>& alphas) {
  if (alphas.empty()) return "none";
  std::string s = "[";
  for (std::size_t i = 0; i < alphas.size(); ++i) s += (i ? ", " : "") + number(alphas[i]);
  return s + "]";
}

// Every limit of a rule as (name, text), in the schema's order; "none" when not set.
std::vector<std::pair<std::string, std::string>> limits_of(const DpuOpRule& r) {
  return {{"kernel", range_text(r.kernel)},
          {"stride", range_text(r.stride)},
          {"out_channels", range_text(r.out_channels)},
          {"kernel_channel_budget",
           r.kernel_channel_budget ? std::to_string(*r.kernel_channel_budget) : "none"},
          {"groups", groups_text(r.groups)},
          {"square", r.square ? "true" : "none"},
          {"alpha", alphas_text(r.alphas)},
          {"const_operand", r.const_operand ? "true" : "none"}};
}

void emit_range(YAML::Emitter& out, const char* key,
                const std::optional<std::pair<std::int64_t, std::int64_t>>& r) {
  if (!r) return;
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq << r->first << r->second
      << YAML::EndSeq;
}

void emit_rule(YAML::Emitter& out, const DpuOpRule& r) {
  out << YAML::BeginMap << YAML::Key << "device" << YAML::Value
      << std::string(device_name(r.device));
  const bool any = r.kernel || r.stride || r.out_channels || r.kernel_channel_budget ||
                   !r.groups.empty() || r.square || !r.alphas.empty() || r.const_operand;
  if (any) {
    out << YAML::Key << "limits" << YAML::Value << YAML::BeginMap;
    emit_range(out, "kernel", r.kernel);
    emit_range(out, "stride", r.stride);
    emit_range(out, "out_channels", r.out_channels);
    if (r.kernel_channel_budget)
      out << YAML::Key << "kernel_channel_budget" << YAML::Value << *r.kernel_channel_budget;
    if (!r.groups.empty()) {
      out << YAML::Key << "groups" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (auto g : r.groups) {
        if (g == -1) {
          out << "depthwise";
        } else {
          out << g;
        }
      }
      out << YAML::EndSeq;
    }
    if (r.square) out << YAML::Key << "square" << YAML::Value << true;
    if (!r.alphas.empty()) {
      out << YAML::Key << "alpha" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (double a : r.alphas) out << number(a);
      out << YAML::EndSeq;
    }
    if (r.const_operand) out << YAML::Key << "const_operand" << YAML::Value << true;
    out << YAML::EndMap;
  }
  if (!r.source.empty()) out << YAML::Key << "source" << YAML::Value << r.source;
  out << YAML::EndMap;
}

std::string finding_comment(const CompiledVerdict& v) {
  std::string left, boundary;
  for (const auto& f : v.findings) {
    std::string& s = f.verdict == Verdict::Cpu ? left : boundary;
    s += (s.empty() ? "" : ", ") +
         (f.op.empty() ? f.rule : f.type + " '" + f.op + "' (" + f.rule + ")");
  }
  std::string c;
  if (!left.empty()) c = "left the DPU: " + left;
  if (!boundary.empty()) c += (c.empty() ? "" : "; ") + std::string("boundary: ") + boundary;
  return c;
}

template <typename Map, typename Text>
void diff_maps(const std::string& prefix, const Map& a, const Map& b, Text text,
               std::vector<std::string>& lines) {
  for (const auto& [key, va] : a) {
    auto it = b.find(key);
    const std::string tb = it == b.end() ? "(not listed)" : text(it->second);
    if (tb != text(va)) lines.push_back(prefix + key + ": " + text(va) + " -> " + tb);
  }
  for (const auto& [key, vb] : b)
    if (!a.count(key)) lines.push_back(prefix + key + ": (not listed) -> " + text(vb));
}

}  // namespace

std::string learned_oracle_yaml(const Oracle& base,
                                const std::map<std::string, CompiledVerdict>& verdicts,
                                const LearnProvenance& provenance) {
  YAML::Emitter out;
  out << YAML::Comment(
             "Learned by `dpushard oracle learn` (docs/splitting.md): the micro_models verdicts "
             "come from the compiled files alone;\nunknown_ops, ops and boundaries are those of "
             "the base oracle '" +
             base.name() + "'. Compare two oracles with `dpushard oracle diff A B`.")
      << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << base.name() + "-learned";
  out << YAML::Key << "learned_from" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "base_oracle" << YAML::Value << base.name();
  out << YAML::Key << "vitis_ai" << YAML::Value
      << (provenance.vitis_ai.empty() ? "unknown" : provenance.vitis_ai);
  out << YAML::Key << "arch_json_sha256" << YAML::Value
      << (provenance.arch_json_sha256.empty() ? "unknown" : provenance.arch_json_sha256);
  out << YAML::Key << "arch_fingerprint" << YAML::Value
      << (provenance.arch_fingerprint.empty() ? "none" : provenance.arch_fingerprint);
  out << YAML::Key << "compiled_dir" << YAML::Value << provenance.compiled_dir;
  out << YAML::Key << "compiled_files" << YAML::Value << std::to_string(verdicts.size());
  out << YAML::EndMap;
  out << YAML::Key << "unknown_ops" << YAML::Value
      << std::string(device_name(base.unknown_device()));
  out << YAML::Key << "ops" << YAML::Value << YAML::BeginMap;
  for (const auto& [type, rule] : base.rules()) {
    out << YAML::Key << type << YAML::Value;
    emit_rule(out, rule);
  }
  out << YAML::EndMap;
  out << YAML::Key << "boundaries" << YAML::Value << YAML::BeginMap;
  for (const auto& [rule, source] : base.boundary_sources()) {
    out << YAML::Key << rule << YAML::Value << YAML::BeginMap;
    if (!source.empty()) out << YAML::Key << "source" << YAML::Value << source;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "micro_models" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, v] : verdicts) {
    out << YAML::Key << name << YAML::Value << std::string(verdict_name(v.verdict));
    const std::string c = finding_comment(v);
    if (!c.empty()) out << YAML::Comment(c);
  }
  out << YAML::EndMap << YAML::EndMap;
  if (!out.good()) throw Error("oracle learn: cannot write YAML: " + out.GetLastError());
  return std::string(out.c_str()) + "\n";
}

std::vector<std::string> diff_oracles(const Oracle& a, const Oracle& b) {
  std::vector<std::string> lines;
  if (a.unknown_device() != b.unknown_device())
    lines.push_back("unknown_ops: " + std::string(device_name(a.unknown_device())) + " -> " +
                    std::string(device_name(b.unknown_device())));
  for (const auto& [type, ra] : a.rules()) {
    auto it = b.rules().find(type);
    if (it == b.rules().end()) {
      lines.push_back("ops." + type + ": " + std::string(device_name(ra.device)) +
                      " -> (not listed)");
      continue;
    }
    const DpuOpRule& rb = it->second;
    if (ra.device != rb.device)
      lines.push_back("ops." + type + ".device: " + std::string(device_name(ra.device)) + " -> " +
                      std::string(device_name(rb.device)));
    const auto la = limits_of(ra), lb = limits_of(rb);
    for (std::size_t i = 0; i < la.size(); ++i)
      if (la[i].second != lb[i].second)
        lines.push_back("ops." + type + ".limits." + la[i].first + ": " + la[i].second + " -> " +
                        lb[i].second);
  }
  for (const auto& [type, rb] : b.rules())
    if (!a.rules().count(type))
      lines.push_back("ops." + type + ": (not listed) -> " + std::string(device_name(rb.device)));
  diff_maps(
      "boundaries.", a.boundary_sources(), b.boundary_sources(),
      [](const std::string&) { return std::string("listed"); }, lines);
  diff_maps(
      "micro_models.", a.expectations(), b.expectations(),
      [](Verdict v) { return std::string(verdict_name(v)); }, lines);
  diff_maps(
      "learned_from.", a.provenance(), b.provenance(), [](const std::string& s) { return s; },
      lines);
  return lines;
}

void write_oracle_file(const std::filesystem::path& path, const std::string& text) {
  write_file_atomically(path, text);
}

}  // namespace dpushard
