// compile_equivalent.hpp: an `_int` fragment in the compiled layout.

#include "compile_equivalent.hpp"

#include <algorithm>
#include <map>

#include "dpushard/error.hpp"

namespace dpushard::vart_test {

Graph compile_equivalent(const Graph& int_graph) {
  Graph out(int_graph.name());
  std::map<std::string, std::string> renamed;  // input fix op -> data-fix op
  Subgraph root;
  root.name = "root";
  Subgraph dpu;
  dpu.name = "subgraph_dpu";
  dpu.attrs["device"] = std::string("DPU");
  Subgraph cpu;
  cpu.name = "subgraph_fix2float";
  cpu.attrs["device"] = std::string("CPU");

  for (const Op* data : int_graph.inputs()) {
    const auto consumers = int_graph.consumers(data->name);
    if (consumers.size() != 1 || consumers[0]->type != "fix")
      throw Error("compile_equivalent: input '" + data->name + "' is not followed by one fix op");
    const Op& fix = *consumers[0];
    Op op = *data;
    op.type = "data-fix";
    op.attrs["data_type"] = std::string("XINT8");
    op.output.name = fix.name;
    op.output.shape = fix.output.shape.empty() ? data->output.shape : fix.output.shape;
    op.output.data_type = DataType::XInt;
    op.output.bit_width = 8;
    op.output.attrs["fix_point"] = get_attr<std::int32_t>(fix.attrs, "fix_point", fix.name);
    renamed[fix.name] = data->name;
    Subgraph user;
    user.name = "subgraph_" + data->name;
    user.ops = {data->name};
    user.attrs["device"] = std::string("USER");
    root.children.push_back(user);
    out.add_op(std::move(op));
  }
  std::vector<std::string> outputs;
  for (const Op* o : int_graph.outputs()) outputs.push_back(o->name);
  for (const Op& original : int_graph.ops()) {
    if (original.type == "data" || renamed.contains(original.name)) continue;
    Op op = original;
    for (OpArg& arg : op.args)
      for (std::string& p : arg.producers)
        if (const auto it = renamed.find(p); it != renamed.end()) p = it->second;
    const bool is_output = std::find(outputs.begin(), outputs.end(), op.name) != outputs.end();
    if (is_output) {
      if (op.type != "fix")
        throw Error("compile_equivalent: output '" + op.name + "' is not a fix op");
      op.output.data_type = DataType::XInt;
      op.output.bit_width = 8;
      op.output.attrs["fix_point"] = get_attr<std::int32_t>(op.attrs, "fix_point", op.name);
      Op f2f;
      f2f.name = op.name + "_";
      f2f.type = "fix2float";
      f2f.attrs = op.attrs;
      f2f.args = {OpArg{"input", {op.name}}};
      f2f.output.name = f2f.name;
      f2f.output.shape = op.output.shape;
      cpu.ops.push_back(f2f.name);
      out.add_op(std::move(f2f));
    }
    dpu.ops.push_back(op.name);
    out.add_op(std::move(op));
  }
  root.children.push_back(dpu);
  if (!cpu.ops.empty()) root.children.push_back(cpu);
  for (const Op& op : out.ops()) root.ops.push_back(op.name);
  out.root() = root;
  return out;
}

}  // namespace dpushard::vart_test
