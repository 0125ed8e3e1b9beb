// compile_equivalent.hpp: an `_int` fragment in the compiled layout.

#include "compile_equivalent.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/shape.hpp"

namespace dpushard::vart_test {
namespace {

// A tensor that leaves the DPU subgraph (to a CPU op or as an output) is int8 at its fix
// point, as vai_c_xir writes it; only a fix op can be one. `role` says which it is.
void leave_dpu_as_xint(Op& op, const std::string& role) {
  if (op.type != "fix") throw Error("compile_equivalent: '" + op.name + role + " is not a fix op");
  op.output.data_type = DataType::XInt;
  op.output.bit_width = 8;
  op.output.attrs["fix_point"] = get_attr<std::int32_t>(op.attrs, "fix_point", op.name);
}

}  // namespace

Graph compile_equivalent(const Graph& int_graph) { return compile_equivalent(int_graph, {}); }

Graph compile_equivalent(const Graph& int_graph, const std::set<std::string>& cpu_ops) {
  std::set<std::string> on_cpu = cpu_ops;
  for (const Op& op : int_graph.ops())
    if (op.type == "fix" && op.all_producers().size() == 1 &&
        cpu_ops.contains(op.all_producers().front()))
      on_cpu.insert(op.name);
  Subgraph tail;
  tail.name = "subgraph_cpu_tail";
  tail.attrs["device"] = std::string("CPU");
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
    if (on_cpu.contains(op.name)) {
      tail.ops.push_back(op.name);
      out.add_op(std::move(op));
      continue;
    }
    const auto consumers = int_graph.consumers(op.name);
    const bool read_by_cpu = std::any_of(consumers.begin(), consumers.end(),
                                         [&](const Op* c) { return on_cpu.contains(c->name); });
    if (read_by_cpu) leave_dpu_as_xint(op, "', read by a CPU op,");
    const bool is_output = std::find(outputs.begin(), outputs.end(), op.name) != outputs.end();
    if (is_output) {
      leave_dpu_as_xint(op, "', an output,");
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
  if (!tail.ops.empty()) root.children.push_back(tail);
  if (!cpu.ops.empty()) root.children.push_back(cpu);
  for (const Op& op : out.ops()) root.ops.push_back(op.name);
  out.root() = root;
  return out;
}

Graph with_float_cpu_ops(const Graph& compiled, bool float_outputs) {
  if (!compiled.root())
    throw Error("with_float_cpu_ops: '" + compiled.name() + "' has no subgraphs");
  std::set<std::string> on_cpu;
  for (const Subgraph& child : compiled.root()->children)
    if (child.device() == "CPU") on_cpu.insert(child.ops.begin(), child.ops.end());
  Graph out(compiled.name());
  out.attrs() = compiled.attrs();
  std::set<std::string> float2fix, dropped;
  std::vector<std::string> added;  // new ops, for the CPU subgraph
  auto xint = [](Op& op) {
    op.output.data_type = DataType::XInt;
    op.output.bit_width = 8;
    op.output.attrs["fix_point"] = get_attr<std::int32_t>(op.attrs, "fix_point", op.name);
  };
  auto add_fix2float = [&](const std::string& name, const std::string& from) {
    const auto fp = fix_point_of(compiled, from);
    if (!fp) throw Error("with_float_cpu_ops: '" + from + "' has no fix_point");
    Op op;
    op.name = name;
    op.type = "fix2float";
    op.attrs = {{"fix_point", std::int32_t{*fp}},
                {"bit_width", std::int32_t{8}},
                {"if_signed", true},
                {"round_mode", std::string("DPU_ROUND")}};
    op.args = {OpArg{"input", {from}}};
    op.output.name = name;
    op.output.shape = compiled.op(from).output.shape;
    out.add_op(std::move(op));
    added.push_back(name);
  };
  for (const Op& original : compiled.ops()) {
    if (!on_cpu.contains(original.name) || original.type == "fix2float") {
      out.add_op(original);
      continue;
    }
    Op op = original;
    const bool is_output = compiled.consumers(op.name).empty();
    if (op.type == "fix") {
      if (is_output && float_outputs) {
        dropped.insert(op.name);
        continue;
      }
      op.type = "float2fix";
      xint(op);
      float2fix.insert(op.name);
      out.add_op(std::move(op));
      if (is_output) add_fix2float(original.name + "_", original.name);
      continue;
    }
    for (OpArg& arg : op.args)
      for (std::string& p : arg.producers) {
        if (on_cpu.contains(p) && !float2fix.contains(p)) continue;
        if (compiled.op(p).type == "const" || compiled.op(p).type == "const-fix") continue;
        const std::string name = p + "_fix2float";
        if (out.find(name) == nullptr) add_fix2float(name, p);
        p = name;
      }
    out.add_op(std::move(op));
  }
  Subgraph root = *compiled.root();
  for (Subgraph& child : root.children) {
    if (child.name != "subgraph_cpu_tail") continue;  // compile_equivalent's CPU ops
    std::erase_if(child.ops, [&](const std::string& op) { return dropped.contains(op); });
    child.ops.insert(child.ops.end(), added.begin(), added.end());
    added.clear();
  }
  root.ops.clear();
  for (const Op& op : out.ops()) root.ops.push_back(op.name);
  out.root() = root;
  return out;
}

Graph with_test_weights(Graph compiled, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::set<std::string> depthwise_weights;
  for (const Op& op : compiled.ops())
    if (op.type == "depthwise-conv2d-fix")
      for (const std::string& w : op.producers("weights")) depthwise_weights.insert(w);
  for (Op& op : compiled.mutable_ops()) {
    if (op.type != "const-fix") continue;
    const Bytes* data = find_attr<Bytes>(op.attrs, "data");
    if (data != nullptr && !data->data.empty()) continue;
    const auto& shape = op.output.shape;
    Bytes bytes;
    bytes.data.assign(static_cast<std::size_t>(element_count(shape)), char{0});
    if (shape.size() == 4) {  // weights [oc, kh, kw, ic]; rank 1 is a bias, left zero
      const bool depthwise = depthwise_weights.contains(op.name);  // [1, kh, kw, channels]
      const double fan_in = static_cast<double>(shape[1] * shape[2] * (depthwise ? 1 : shape[3]));
      const int fp = static_cast<int>(int_attr(op.output.attrs, "fix_point", 0));
      std::normal_distribution<double> value(0.0, std::ldexp(std::sqrt(2.0 / fan_in), fp));
      for (char& c : bytes.data)
        c = static_cast<char>(std::clamp(std::nearbyint(value(random)), -128.0, 127.0));
    }
    op.attrs["data"] = std::move(bytes);
  }
  return compiled;
}

}  // namespace dpushard::vart_test
