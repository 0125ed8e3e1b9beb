#include "dpushard/fragment_io.hpp"

#include "dpushard/backend.hpp"
#include "dpushard/sha256.hpp"
#include "dpushard/xmodel.hpp"

namespace dpushard {

Graph load_fragment(const Plan& plan, const PlanFragment& f, const std::filesystem::path& dir) {
  (void)plan;
  const std::string where = "plan fragment '" + f.name + "'";
  const auto path = dir / f.file;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(where + ": file " + path.string() + " is missing");
  std::string hash;
  try {
    hash = sha256_file(path);  // refuses a folder or a FIFO, naming the path
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  if (hash != f.sha256)
    throw Error(where + ": " + path.string() + " has sha256 " + hash + ", the plan records " +
                (f.sha256.empty() ? std::string("none") : f.sha256));
  Graph g = read_xmodel(path);
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
  return g;
}

void check_plan_files(const Plan& plan, const std::filesystem::path& dir) {
  for (const auto& f : plan.fragments) (void)load_fragment(plan, f, dir);
}

}  // namespace dpushard
