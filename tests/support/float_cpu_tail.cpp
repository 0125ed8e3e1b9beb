#include "support/float_cpu_tail.hpp"

#include "dpushard/base/error.hpp"
#include "dpushard/graph/builder.hpp"

namespace dpushard::testing {

FloatCpuTail::FloatCpuTail(Graph& compiled, Graph& int_graph)
    : compiled_(compiled), int_graph_(int_graph) {
  if (compiled.outputs().size() != 1 || compiled.outputs()[0]->type != "fix2float" ||
      int_graph.outputs().size() != 1)
    throw Error("FloatCpuTail: one fix2float output and one `_int` output are needed");
  f2f_ = compiled.outputs()[0]->name;
  int_out_ = int_graph.outputs()[0]->name;
  fix_point_ = fix_point_of(int_graph, int_out_).value();
  shape_ = compiled.op(f2f_).output.shape;
}

void FloatCpuTail::add_compiled(const std::string& name, const std::string& type,
                                const std::vector<std::string>& inputs, AttrMap attrs,
                                std::vector<std::int64_t> shape, std::optional<int> fix_point) {
  Op op;
  op.name = name;
  op.type = type;
  op.attrs = std::move(attrs);
  op.args = {OpArg{"input", inputs}};
  op.output.name = name;
  op.output.shape = std::move(shape);
  if (fix_point) {
    op.output.data_type = DataType::XInt;
    op.output.bit_width = 8;
    op.output.attrs["fix_point"] = std::int32_t{*fix_point};
  }
  compiled_.add_op(std::move(op));
  for (Subgraph& child : compiled_.root()->children)
    if (child.device() == "CPU") child.ops.push_back(name);
  compiled_.root()->ops.push_back(name);
}

void FloatCpuTail::add_compiled_only(const std::string& name, const std::string& type,
                                     AttrMap attrs) {
  add_compiled(name, type, {f2f_}, std::move(attrs), shape_, std::nullopt);
}

void FloatCpuTail::add(const std::string& name, const std::string& type, int inputs, AttrMap attrs,
                       std::vector<std::int64_t> shape, std::optional<int> float2fix,
                       int int_fix_point) {
  add_compiled(name, type, std::vector<std::string>(static_cast<std::size_t>(inputs), f2f_), attrs,
               shape, std::nullopt);
  if (float2fix) {
    const AttrMap fix = {{"fix_point", std::int32_t{*float2fix}},
                         {"bit_width", std::int32_t{8}},
                         {"if_signed", true},
                         {"round_mode", std::string("DPU_ROUND")}};
    add_compiled(name + "_float2fix", "float2fix", {name}, fix, shape, *float2fix);
    add_compiled(name + "_fix2float", "fix2float", {name + "_float2fix"}, fix, shape, std::nullopt);
  }
  Op op;
  op.name = name;
  op.type = type;
  op.attrs = std::move(attrs);
  op.args = {OpArg{"input", std::vector<std::string>(static_cast<std::size_t>(inputs), int_out_)}};
  op.output.name = name;
  op.output.shape = shape;
  int_graph_.add_op(std::move(op));
  Op fix = make_fix_op(name + "_fix", name, int_fix_point);
  fix.output.name = fix.name;
  fix.output.shape = std::move(shape);
  int_graph_.add_op(std::move(fix));
}

}  // namespace dpushard::testing
