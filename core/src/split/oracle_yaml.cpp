// Reading oracle files (schema in docs/splitting.md) with the one YAML reader; the op rules
// are perf's (dpushard/perf/dpu_rules.hpp), so the timing model reads the same facts.
#include "dpushard/base/regular_file.hpp"
#include "dpushard/perf/dpu_rules.hpp"
#include "dpushard/split/oracle.hpp"
#include "dpushard/yaml/yaml_reader.hpp"

namespace dpushard {
namespace {

const char* const kBoundaryRules[] = {"output_not_fixed", "output_consumed_inside",
                                      "several_dpu_subgraphs"};

}  // namespace

Oracle Oracle::read(const yaml::Document& doc, Oracle oracle) {
  const yaml::Map top =
      doc.root().map({"name", "unknown_ops", "ops", "boundaries", "micro_models", "learned_from"});
  oracle.name_ = top.get("name").nonempty_text();
  DpuRules rules = read_dpu_rules(top);
  oracle.rules_ = std::move(rules.ops);
  oracle.unknown_device_ = rules.unknown_ops;
  const yaml::Map boundaries =
      top.get("boundaries").map({kBoundaryRules[0], kBoundaryRules[1], kBoundaryRules[2]});
  for (const char* rule : kBoundaryRules) {
    const yaml::Value b = boundaries.get(rule);
    std::string source;
    if (b.is_map()) {
      if (auto s = b.map({"source"}).find("source")) source = s->text();
    } else if (!b.node().IsNull()) {
      b.fail("expected a map with 'source'");
    }
    oracle.boundary_sources_[rule] = source;
  }
  if (auto micro = top.find("micro_models"))
    for (const auto& [name, v] : micro->open_map().entries()) {
      const std::string verdict = v.text();
      try {
        oracle.expected_[name] = parse_verdict(verdict);
      } catch (const Error& e) {
        v.fail(e.what());
      }
    }
  if (auto learned = top.find("learned_from"))
    for (const auto& [key, v] : learned->open_map().entries()) oracle.provenance_[key] = v.text();
  return oracle;
}

Oracle Oracle::parse(const std::string& yaml_text, const std::string& origin) {
  Oracle oracle;
  oracle.origin_ = origin;
  oracle.text_ = yaml_text;
  return read(yaml::Document::parse(yaml_text, origin), std::move(oracle));
}

Oracle Oracle::load(const std::filesystem::path& path) {
  return parse(read_regular_file(path, "oracle " + path.string()), path.string());
}

const Oracle& Oracle::builtin() {
  static const Oracle oracle = parse(std::string(builtin_oracle_yaml()), "builtin");
  return oracle;
}

}  // namespace dpushard
