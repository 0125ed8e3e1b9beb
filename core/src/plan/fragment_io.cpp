// Fragment files: the recorded hash, loading against the plan, the wire form.
#include "dpushard/plan/fragment_io.hpp"

#include <algorithm>

#include "dpushard/base/regular_file.hpp"
#include "dpushard/base/sha256.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/model_check.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard {

std::string read_recorded_file(const std::filesystem::path& path, const std::string& recorded,
                               const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(what + ": " + path.string() + " is missing");
  // Refuses a folder or a FIFO, naming the path.
  std::string bytes = read_regular_file(path, what + ": " + path.string());
  const std::string hash =
      to_hex(sha256(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size())));
  if (hash != recorded)
    throw Error(what + ": " + path.string() + " has sha256 " + hash + ", the plan records " +
                (recorded.empty() ? std::string("none") : recorded));
  return bytes;
}

LoadedFragment read_fragment(const PlanFragment& f, const std::filesystem::path& dir) {
  const std::string where = "plan fragment '" + f.name + "'";
  const auto path = dir / f.file;
  LoadedFragment loaded;
  loaded.bytes = read_recorded_file(path, f.sha256, where);
  // A matching hash says the bytes are the ones recorded, not that they are a model.
  Graph& g = loaded.graph;
  try {
    g = parse_xmodel(loaded.bytes, path.string());
    validate_loaded(g);
  } catch (const Error& e) {
    const std::string reason = e.what();
    throw Error(where + ": " +
                (reason.starts_with(path.string()) ? reason : path.string() + ": " + reason));
  }
  const auto specs = input_specs(g);
  if (specs.size() != f.inputs.size())
    throw Error(where + ": the file has " + std::to_string(specs.size()) + " inputs, the plan " +
                std::to_string(f.inputs.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& t = f.inputs[i];
    if (specs[i].name != t.name || specs[i].shape != t.shape || specs[i].fix_point != t.fix_point)
      throw Error(where + ": input " + std::to_string(i) + " is '" + specs[i].name +
                  "' in the file but '" + t.name + "' (or another shape or fix_point) in the plan");
  }
  const auto outs = g.outputs();
  if (outs.size() != f.outputs.size())
    throw Error(where + ": the file has " + std::to_string(outs.size()) + " outputs, the plan " +
                std::to_string(f.outputs.size()));
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto& t = f.outputs[i];
    const auto fp = fix_point_of(g, outs[i]->name);
    const bool fp_ok = t.fixed ? (fp && *fp == t.fix_point) : !fp;
    if (outs[i]->name != t.name || outs[i]->output.shape != t.shape || !fp_ok)
      throw Error(where + ": output " + std::to_string(i) + " is '" + outs[i]->name +
                  "' in the file but '" + t.name + "' (or another shape or fix_point) in the plan");
  }
  return loaded;
}

Graph load_fragment(const PlanFragment& fragment, const std::filesystem::path& dir) {
  return std::move(read_fragment(fragment, dir).graph);
}

void check_plan_files(const Plan& plan, const std::filesystem::path& dir) {
  for (const auto& f : plan.fragments) (void)read_fragment(f, dir);
}

bool wire_fragment(Graph& graph, const PlanFragment& fragment) {
  bool wired = false;
  for (const PlanTensor& t : fragment.outputs) {
    if (t.fixed) continue;
    Op fix = make_fix_op(t.name + std::string(kWireSuffix), t.name, t.fix_point, t.round_mode);
    fix.output.shape = t.shape;
    graph.add_op(std::move(fix));
    wired = true;
  }
  return wired;
}

std::string plan_output_name(const Graph& graph, const Op& op) {
  if (op.type != "fix" || !op.name.ends_with(kWireSuffix)) return op.name;
  const std::string name = op.name.substr(0, op.name.size() - kWireSuffix.size());
  const auto& in = op.producers("input");
  if (in.size() != 1 || in.front() != name || graph.find(name) == nullptr) return op.name;
  return name;
}

}  // namespace dpushard
