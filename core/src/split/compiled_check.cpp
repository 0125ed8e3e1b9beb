// A compiled fragment against its plan (dpushard/split/compiled_check.hpp).

#include "dpushard/split/compiled_check.hpp"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "dpushard/base/error.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/plan/fragment_io.hpp"
#include "dpushard/split/oracle.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard {
namespace {

// Every op of `s` and its descendants.
void collect_ops(const Subgraph& s, std::vector<std::string>& out) {
  out.insert(out.end(), s.ops.begin(), s.ops.end());
  for (const Subgraph& child : s.children) collect_ops(child, out);
}

struct Boundary {
  std::string op;      // the op at the boundary (data-fix; the DPU op an output comes from)
  std::string tensor;  // its output tensor
  std::vector<std::int64_t> shape;
  std::optional<int> fix_point;
};

Boundary boundary_of(const Op& op) {
  Boundary b{op.name, op.output.name, op.output.shape, std::nullopt};
  if (find_attr<std::int32_t>(op.output.attrs, "fix_point") != nullptr ||
      find_attr<std::int64_t>(op.output.attrs, "fix_point") != nullptr)
    b.fix_point = static_cast<int>(int_attr(op.output.attrs, "fix_point", 0));
  return b;
}

std::string names_of(const std::vector<Boundary>& list) {
  std::string out;
  for (const Boundary& b : list) out += (out.empty() ? "" : ", ") + b.tensor;
  return out.empty() ? "none" : out;
}

// The plan's tensors against the compiled file's boundary, by name (the compiler keeps the
// `_int` fix ops' names as its tensors' names; a data-fix op keeps the data op's name).
void check_boundary(const std::string& where, const char* kind,
                    const std::vector<PlanTensor>& planned, const std::vector<Boundary>& found) {
  if (planned.size() != found.size())
    throw Error(where + ": " + std::to_string(found.size()) + " " + kind +
                "s in the compiled file (" + names_of(found) + "), " +
                std::to_string(planned.size()) + " in the plan");
  for (const PlanTensor& t : planned) {
    const auto it = std::find_if(found.begin(), found.end(), [&](const Boundary& b) {
      return b.tensor == t.name || b.op == t.name;
    });
    if (it == found.end())
      throw Error(where + ": the plan's " + kind + " '" + t.name + "' is not one of the compiled " +
                  "file's (" + names_of(found) + ")");
    if (it->shape != t.shape)
      throw Error(where + ": " + kind + " '" + t.name + "' has shape " + shape_text(it->shape) +
                  " in the compiled file, " + shape_text(t.shape) + " in the plan");
    if (!it->fix_point)
      throw Error(where + ": " + kind + " '" + t.name + "' has no fix_point in the compiled file");
    if (*it->fix_point != t.fix_point)
      throw Error(where + ": " + kind + " '" + t.name + "' has fix_point " +
                  std::to_string(*it->fix_point) + " in the compiled file, " +
                  std::to_string(t.fix_point) + " in the plan");
  }
}

// Whether the oracle predicted `op` (a compiled op's name) on the CPU: a `cpu` finding names
// it, or the `_int` op it was compiled from (the compiler appends to names, never renames).
bool predicted_on_cpu(const PlanFragment& fragment, const std::string& op) {
  return std::any_of(
      fragment.oracle_findings.begin(), fragment.oracle_findings.end(), [&](const PlanFinding& f) {
        return f.verdict == verdict_name(Verdict::Cpu) && !f.op.empty() && op.starts_with(f.op);
      });
}

}  // namespace

std::uint64_t compiled_fingerprint(const Graph& compiled, const std::string& what) {
  if (!compiled.root()) throw Error(what + ": not a compiled xmodel (no subgraphs)");
  std::uint64_t fingerprint = 0;
  for (const Subgraph& child : compiled.root()->children) {
    if (child.device() != "DPU") continue;
    const auto* value = find_attr<std::uint64_t>(child.attrs, "dpu_fingerprint");
    if (value == nullptr || *value == 0)
      throw Error(what + ": DPU subgraph '" + child.name + "' has no dpu_fingerprint");
    if (fingerprint != 0 && *value != fingerprint)
      throw Error(what + ": DPU subgraphs compiled for different DPUs (" +
                  fingerprint_text(fingerprint) + ", " + fingerprint_text(*value) + ")");
    fingerprint = *value;
  }
  if (fingerprint == 0) throw Error(what + ": no DPU subgraph");
  return fingerprint;
}

std::vector<std::string> check_compiled_fragment(const PlanFragment& fragment,
                                                 const Graph& compiled,
                                                 const CompiledCheckOptions& options) {
  if (!fragment.compiled) throw Error("fragment '" + fragment.name + "': no compiled entry");
  const std::string where =
      "fragment '" + fragment.name + "': compiled file " + fragment.compiled->file;
  std::vector<std::string> warnings;

  // Placement: DPU subgraphs as predicted, and no CPU op the oracle did not put there.
  const std::uint64_t fingerprint = compiled_fingerprint(compiled, where);
  int dpu_subgraphs = 0;
  std::map<std::string, const Op*> ops;
  for (const Op& op : compiled.ops()) ops[op.name] = &op;
  for (const Subgraph& child : compiled.root()->children) {
    if (child.device() == "DPU") ++dpu_subgraphs;
    if (child.device() != "CPU") continue;
    std::vector<std::string> members;
    collect_ops(child, members);
    for (const std::string& name : members) {
      const auto it = ops.find(name);
      const std::string type = it == ops.end() ? "?" : it->second->type;
      if (type == "fix2float" || predicted_on_cpu(fragment, name)) continue;
      const std::string line = where + ": op '" + name + "' (" + type + ") runs in CPU subgraph '" +
                               child.name + "', the oracle predicted the DPU";
      if (!options.allow_cpu_subgraphs)
        throw Error(line + " (--allow-cpu-subgraphs makes this a warning)");
      warnings.push_back(line);
    }
  }
  if (dpu_subgraphs != fragment.dpu_subgraphs) {
    const std::string line = where + ": " + std::to_string(dpu_subgraphs) +
                             " DPU subgraphs, the oracle predicted " +
                             std::to_string(fragment.dpu_subgraphs);
    if (!options.allow_cpu_subgraphs) throw Error(line);
    warnings.push_back(line);
  }

  // The DPU it was compiled for.
  if (fingerprint != fragment.compiled->dpu_fingerprint)
    throw Error(where + ": compiled for DPU " + fingerprint_text(fingerprint) +
                ", the plan records " + fingerprint_text(fragment.compiled->dpu_fingerprint));
  if (options.target_fingerprint != 0 && fingerprint != options.target_fingerprint)
    throw Error(where + ": compiled for DPU " + fingerprint_text(fingerprint) +
                ", the target's DPU is " + fingerprint_text(options.target_fingerprint));

  // Boundary tensors: the data-fix inputs, and the outputs (through the compiler's fix2float).
  std::vector<Boundary> inputs, outputs;
  for (const Op* op : compiled.inputs()) inputs.push_back(boundary_of(*op));
  for (const Op* op : compiled.outputs()) {
    const Op* source = op;
    if (op->type == "fix2float") {
      const auto producers = op->all_producers();
      if (producers.size() == 1 && ops.contains(producers[0])) source = ops.at(producers[0]);
    }
    outputs.push_back(boundary_of(*source));
  }
  check_boundary(where, "input", fragment.inputs, inputs);
  check_boundary(where, "output", fragment.outputs, outputs);
  return warnings;
}

std::vector<std::string> check_compiled_plan(const Plan& plan, const std::filesystem::path& dir,
                                             const CompiledCheckOptions& options) {
  std::vector<std::string> warnings;
  for (const PlanFragment& fragment : plan.fragments) {
    if (!fragment.compiled) continue;
    const std::filesystem::path path = dir / fragment.compiled->file;
    const std::string what =
        "fragment '" + fragment.name + "': compiled file " + fragment.compiled->file;
    const std::string bytes = read_recorded_file(path, fragment.compiled->sha256,
                                                 "fragment '" + fragment.name + "': compiled file");
    Graph compiled;
    try {
      compiled = parse_xmodel(bytes, path.string());
    } catch (const Error& e) {
      throw Error(what + ": " + e.what());
    }
    const auto more = check_compiled_fragment(fragment, compiled, options);
    warnings.insert(warnings.end(), more.begin(), more.end());
  }
  return warnings;
}

bool has_compiled_fragments(const Plan& plan) {
  return std::any_of(plan.fragments.begin(), plan.fragments.end(),
                     [](const PlanFragment& f) { return f.compiled.has_value(); });
}

}  // namespace dpushard
