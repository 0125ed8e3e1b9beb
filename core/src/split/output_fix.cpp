#include "output_fix.hpp"

#include <algorithm>

#include "dpushard/graph/builder.hpp"
#include "op_classes.hpp"

namespace dpushard::split {

std::vector<std::string> unfixed_layout_outputs(const Graph& model) {
  std::vector<std::string> out;
  for (const Op* op : model.outputs())
    if (is_layout_op(op->type) && fix_point_of(model, op->name)) out.push_back(op->name);
  return out;
}

Graph insert_output_fixes(const Graph& model, const std::vector<std::string>& layout_ops,
                          std::vector<PlanAdjustment>& adjustments, const std::string& why) {
  if (layout_ops.empty()) return model;
  std::vector<std::pair<std::string, int>> targets;  // name, fix_point
  for (const auto& name : layout_ops) {
    const Op& op = model.op(name);
    const auto fp = fix_point_of(model, name);
    if (!is_layout_op(op.type) || !fp)
      throw Error("split: '" + name + "' (" + op.type + ") is not a layout op over a fixed value");
    targets.emplace_back(name, *fp);
  }
  auto renamed = [](const std::string& name) { return name + "__layout"; };
  Graph out(model.name());
  for (const Op& op : model.ops()) {
    auto it = std::find_if(targets.begin(), targets.end(),
                           [&](const auto& t) { return t.first == op.name; });
    if (it == targets.end()) {
      out.add_op(op);
      continue;
    }
    Op moved = op;
    moved.name = renamed(op.name);
    moved.output.name = moved.name;
    out.add_op(moved);
    Op fix = make_fix_op(op.name, moved.name, it->second, RoundMode::Dpu);
    fix.output.shape = op.output.shape;
    out.add_op(std::move(fix));
    adjustments.push_back(
        {"inserted_fix", op.name, op.name,
         why + ": '" + op.name + "' (" + op.type +
             ") carries no fix; an explicit fix with its fix_point " + std::to_string(it->second) +
             " follows it (int8 values unchanged); the layout op is now '" + moved.name + "'"});
  }
  out.attrs() = model.attrs();
  out.op_defs() = model.op_defs();
  return out;
}

}  // namespace dpushard::split
