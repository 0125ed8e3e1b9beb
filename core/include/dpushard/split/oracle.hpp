#pragma once
// The compiler oracle: where the DPU compiler (vai_c_xir for the KV260's DPUCZDX8G) places
// each op of a fragment, and what a fragment boundary costs. The knowledge is data: a YAML
// file (the shipped default, targets/dpu/dpuczdx8g.yaml, is compiled into the binary) with
// the DPU's op rules (dpushard/perf/dpu_rules.hpp, shared with the timing model), boundary rules
// and the expected outcome of every micro-model. See docs/splitting.md.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/perf/device.hpp"
#include "dpushard/perf/dpu_rules.hpp"

namespace dpushard {

// The outcome for a fragment, worst first: some op placed on the CPU; everything computing
// on the DPU but the boundary costs something (a CPU op that only moves data, an output the
// compiler must be told to keep, several DPU subgraphs); or all on one DPU subgraph.
enum class Verdict { Dpu, DpuBoundary, Cpu };
std::string_view verdict_name(Verdict verdict);  // "dpu", "dpu+boundary", "cpu"
Verdict parse_verdict(std::string_view text);    // throws dpushard::Error on unknown text

struct Placement {
  Device device = Device::Dpu;
  std::string rule;    // the oracle rule that decided, empty for the default DPU placement
  std::string reason;  // one line, empty for the default DPU placement
};

struct OracleFinding {
  std::string op;
  std::string rule;  // "conv2d.kernel", "output_not_fixed", "output_consumed_inside", ...
  Verdict verdict = Verdict::Dpu;
  std::string reason;  // one line
};

struct FragmentVerdict {
  Verdict verdict = Verdict::Dpu;       // the worst finding
  std::vector<OracleFinding> findings;  // empty when everything runs on one DPU subgraph
  int dpu_subgraphs = 0;                // predicted DPU subgraphs (1 is the goal)
  int cpu_subgraphs = 0;                // predicted CPU subgraphs (fix2float not counted)
  std::map<std::string, Placement, std::less<>> placements;  // every computing op
};

class Oracle {
 public:
  // The shipped KV260 oracle.
  static const Oracle& builtin();
  // Reads an oracle file; a bad file throws dpushard::Error in the one YAML error format
  // (dpushard/yaml/yaml_reader.hpp).
  static Oracle load(const std::filesystem::path& path);
  static Oracle parse(const std::string& yaml_text, const std::string& origin);

  const std::string& name() const { return name_; }
  const std::string& origin() const { return origin_; }  // "builtin" or the file path
  const std::string& text() const { return text_; }      // the YAML it was read from

  // Where the compiler puts `op` by its type and configuration alone.
  Placement place(const Graph& graph, const Op& op) const;
  // Placements of every computing op of a fragment with the boundary rules applied: an
  // output not produced by a fix sends its trailing ops to the CPU, an output also
  // consumed inside the fragment must be kept with output_ops, ...
  FragmentVerdict judge(const Graph& fragment) const;

  // Where a boundary rule ("output_not_fixed", ...) comes from, as the file records it.
  const std::string& boundary_source(std::string_view rule) const;
  // The expected outcome listed for a micro-model, or nullopt when it is not listed.
  std::optional<Verdict> expected(std::string_view micro_model) const;
  const std::map<std::string, Verdict, std::less<>>& expectations() const { return expected_; }

  // The file's parts, as read (for `dpushard oracle learn` and `oracle diff`).
  const std::map<std::string, DpuOpRule, std::less<>>& rules() const { return rules_; }
  Device unknown_device() const { return unknown_device_; }
  const std::map<std::string, std::string, std::less<>>& boundary_sources() const {
    return boundary_sources_;
  }
  // `learned_from`: where a learned oracle comes from (Vitis AI version, arch.json sha256
  // and fingerprint, ...); empty for a hand-written one.
  const std::map<std::string, std::string, std::less<>>& provenance() const { return provenance_; }

 private:
  Oracle() = default;
  static Oracle read(const yaml::Document& doc, Oracle oracle);  // oracle_yaml.cpp

  std::string name_;
  std::string origin_;
  std::string text_;
  std::map<std::string, DpuOpRule, std::less<>> rules_;  // by op type
  Device unknown_device_ = Device::Cpu;                  // op types the file does not list
  std::map<std::string, std::string, std::less<>> boundary_sources_;  // rule -> source
  std::map<std::string, Verdict, std::less<>> expected_;
  std::map<std::string, std::string, std::less<>> provenance_;
};

}  // namespace dpushard
