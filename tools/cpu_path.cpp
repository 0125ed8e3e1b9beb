// Splitting a compiled model into its DPU subgraph and its CPU tail (cpu_path.hpp).

#include "cpu_path.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/xmodel/lower_float_ops.hpp"

namespace dpushard::cli {
namespace {

// Each op's top-level subgraph device ("DPU", "CPU", "USER"; "" outside every subgraph).
std::unordered_map<std::string, std::string> devices(const Graph& graph) {
  std::unordered_map<std::string, std::string> device;
  const std::function<void(const Subgraph&, const std::string&)> collect =
      [&](const Subgraph& s, const std::string& top) {
        for (const auto& op : s.ops) device.emplace(op, top);
        for (const auto& child : s.children) collect(child, top);
      };
  for (const Subgraph& child : graph.root()->children) collect(child, child.device());
  return device;
}

bool is_const(const Graph& graph, const std::string& name) {
  const Op& op = graph.op(name);
  if (op.type == "const" || op.type == "const-fix") return true;
  const auto producers = op.all_producers();
  return op.type == "fix" && producers.size() == 1 && is_const(graph, producers.front());
}

}  // namespace

std::optional<CpuPath> split_cpu_path(const Graph& compiled) {
  if (!is_compiled(compiled) || !compiled.root()) return std::nullopt;
  const std::string where = "graph '" + compiled.name() + "'";
  const auto device = devices(compiled);
  auto on_cpu = [&](const std::string& op) {
    const auto it = device.find(op);
    return it != device.end() && it->second == "CPU";
  };
  // fix2float is skipped, as the vart backend skips it: its consumers read its input.
  auto source = [&](std::string name) {
    while (compiled.op(name).type == "fix2float") name = compiled.op(name).all_producers().at(0);
    return name;
  };
  std::set<std::string> cpu_ops;
  for (const Op& op : compiled.ops())
    if (on_cpu(op.name) && op.type != "fix2float") cpu_ops.insert(op.name);
  if (cpu_ops.empty()) return std::nullopt;

  CpuPath path{Graph(compiled.name()), Graph(compiled.name() + "_cpu"), {}};
  for (const Op& op : compiled.ops()) {
    if (on_cpu(op.name)) continue;
    for (const std::string& p : op.all_producers())
      if (cpu_ops.contains(source(p)))
        throw Error(where + ": '" + op.name + "' (" + op.type + ") reads '" + p +
                    "' from a CPU subgraph: a CPU subgraph before the DPU needs graph_runner");
    path.dpu.add_op(op);
  }
  Subgraph root = *compiled.root();
  std::erase_if(root.children, [](const Subgraph& s) { return s.device() == "CPU"; });
  std::erase_if(root.ops, [&](const std::string& op) { return on_cpu(op); });
  path.dpu.root() = root;
  path.dpu.attrs() = compiled.attrs();

  // The CPU ops, each DPU tensor they read a `data` + `fix` input named after it, consts copied.
  std::map<std::string, std::string> inputs;  // DPU op -> its fix op in `cpu`
  std::set<std::string> copied;
  const std::function<void(const std::string&)> copy_const = [&](const std::string& name) {
    if (!copied.insert(name).second) return;
    for (const std::string& p : compiled.op(name).all_producers()) copy_const(p);
    path.cpu.add_op(compiled.op(name));
  };
  for (const Op& original : compiled.ops()) {
    if (!cpu_ops.contains(original.name)) continue;
    Op op = original;
    for (OpArg& arg : op.args)
      for (std::string& p : arg.producers) {
        p = source(p);
        if (cpu_ops.contains(p)) continue;
        if (is_const(compiled, p)) {
          copy_const(p);
          continue;
        }
        const Op& produced = compiled.op(p);
        if (produced.type == "data" || produced.type == "data-fix")
          throw Error(where + ": CPU op '" + op.name + "' reads the input '" + p +
                      "' directly: needs graph_runner");
        if (!inputs.contains(p)) {
          const auto fix_point = fix_point_of(compiled, p);
          if (!fix_point)
            throw Error(where + ": '" + p + "', read by CPU op '" + op.name +
                        "', has no fix_point");
          Op data;
          data.name = p + "/host_input";
          data.type = "data";
          data.attrs["shape"] =
              std::vector<std::int32_t>(produced.output.shape.begin(), produced.output.shape.end());
          data.attrs["data_type"] = std::string("FLOAT32");
          data.output.name = data.name;
          data.output.shape = produced.output.shape;
          path.cpu.add_op(std::move(data));
          Op fix = make_fix_op(p + "/host_fix", p + "/host_input", *fix_point);
          fix.output.name = fix.name;
          fix.output.shape = produced.output.shape;
          path.cpu.add_op(std::move(fix));
          inputs[p] = p + "/host_fix";
          path.links.push_back(p);
        }
        p = inputs[p];
      }
    // vai_c_xir's float ops (float2fix, softmax, ...) lowered to `_int` ops; `_int` ops (a
    // chain that a `fix` closes) as they are.
    const auto consumers = compiled.consumers(original.name);
    const bool int_chain = std::any_of(consumers.begin(), consumers.end(),
                                       [](const Op* c) { return c->type == "fix"; });
    if (is_float_cpu_op(op.type) && !int_chain)
      lower_float_cpu_op(op, consumers.empty(), path.cpu);
    else
      path.cpu.add_op(std::move(op));
  }
  return path;
}

std::vector<QTensor> cpu_inputs(const CpuPath& path, const std::vector<QTensor>& specs,
                                const std::vector<QTensor>& dpu_outputs) {
  std::vector<QTensor> inputs;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string& from = path.links.at(i);
    const auto it = std::find_if(dpu_outputs.begin(), dpu_outputs.end(),
                                 [&](const QTensor& t) { return t.name == from; });
    if (it == dpu_outputs.end())
      throw Error("calibrate: the DPU subgraph gave no output '" + from + "' for the CPU ops");
    QTensor in = specs[i];
    if (it->data.size() != static_cast<std::size_t>(element_count(in.shape)))
      throw Error("calibrate: DPU output '" + from + "' has " + std::to_string(it->data.size()) +
                  " values, the CPU ops read " + std::to_string(element_count(in.shape)));
    in.data = it->data;
    inputs.push_back(std::move(in));
  }
  return inputs;
}

}  // namespace dpushard::cli
