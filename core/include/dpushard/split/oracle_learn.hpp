#pragma once
// Learning the compiler oracle from compiled files, and comparing two oracles
// (docs/splitting.md, "Learning and comparing oracles").
//
// A compiled xmodel (vai_c_xir output) says where every op went: the root subgraph's
// children carry `device` = USER, DPU or CPU. judge_compiled reads that placement and
// gives the same verdict kinds as Oracle::judge predicts for the `_int` file: `cpu` when a
// computing op sits in a CPU subgraph (each such op listed with why it left the DPU),
// `dpu+boundary` when everything computing is on the DPU but the boundary costs something
// (several DPU subgraphs, a data-moving op on the CPU beyond the final fix2float, a DPU
// value that leaves its subgraph and is also used inside it), and `dpu` otherwise.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/split/oracle.hpp"

namespace dpushard {

// An op the compiler placed outside a DPU subgraph, or a boundary cost.
struct CompiledFinding {
  std::string op;    // compiled op name; empty for a whole-file finding
  std::string type;  // its oracle type (conv2d-fix -> conv2d, pool-fix MAX -> maxpool2d)
  // Why: "output_not_fixed" (between an unfixed output and the nearest fix), an oracle rule
  // that explains it ("softmax", "conv2d.kernel", "unknown_ops"), "unexplained" (the base
  // oracle places it on the DPU), or a boundary cost: "data_movement",
  // "several_dpu_subgraphs", "output_consumed_inside".
  std::string rule;
  Verdict verdict = Verdict::Dpu;
  std::string reason;  // one line
};

struct CompiledVerdict {
  Verdict verdict = Verdict::Dpu;
  std::vector<CompiledFinding> findings;
  int dpu_subgraphs = 0;
  int cpu_subgraphs = 0;  // CPU subgraphs holding more than the final fix2float
};

// The verdict of one compiled file. `base` only names the rule behind a CPU placement; the
// verdict itself comes from the file. Throws dpushard::Error (naming `origin`) when the
// graph is not a compiled file (no subgraph tree with `device` attributes).
CompiledVerdict judge_compiled(const Graph& compiled, const Oracle& base,
                               const std::string& origin);

// Where a learned oracle comes from; written under `learned_from`.
struct LearnProvenance {
  std::string vitis_ai;          // Vitis AI / vai_c_xir version as the compiler host reports it
  std::string arch_json_sha256;  // of the arch.json the files were compiled with
  std::string arch_fingerprint;  // its "fingerprint" field, when present
  std::string compiled_dir;
};

// An oracle YAML (the schema Oracle::parse reads) with `base`'s rules and boundaries and
// the micro-model verdicts learned from `verdicts`; every verdict carries a comment with
// the ops that left the DPU and why.
std::string learned_oracle_yaml(const Oracle& base,
                                const std::map<std::string, CompiledVerdict>& verdicts,
                                const LearnProvenance& provenance);

// What differs between two oracles, one line each, in a stable order: unknown_ops, op
// rules (device and every limit), boundary rules, micro-model verdicts, provenance.
// Sources (`source:`) and the name are not compared. Empty when equal.
std::vector<std::string> diff_oracles(const Oracle& a, const Oracle& b);

// Writes `text` to `path` atomically (temporary file, then rename).
void write_oracle_file(const std::filesystem::path& path, const std::string& text);

}  // namespace dpushard
