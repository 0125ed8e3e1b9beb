#pragma once
// Helpers for the ref backend's hand-worked tests: build tiny graphs, run them, compare.

#include <cstdint>
#include <string>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/graph/builder.hpp"
#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::testing {

inline QTensor qtensor(std::string name, std::vector<std::int64_t> shape, int fix_point,
                       std::vector<int> values) {
  QTensor t{std::move(name), std::move(shape), fix_point, {}};
  for (int v : values) t.data.push_back(static_cast<std::int8_t>(v));
  return t;
}

inline std::vector<std::int8_t> q8(std::vector<int> values) {
  std::vector<std::int8_t> out;
  for (int v : values) out.push_back(static_cast<std::int8_t>(v));
  return out;
}

inline std::vector<int> ints(const QTensor& t) { return {t.data.begin(), t.data.end()}; }

// Loads `graph` into the ref backend and runs one frame.
inline std::vector<QTensor> run_ref(const Graph& graph, const std::vector<QTensor>& inputs) {
  auto backend = make_backend("ref");
  backend->load(graph);
  return backend->run(inputs);
}

// Runs a one-input, one-output graph and returns the output values.
inline std::vector<int> run_one(const Graph& graph, const QTensor& input) {
  const auto outputs = run_ref(graph, {input});
  return outputs.size() == 1 ? ints(outputs[0]) : std::vector<int>{};
}

// Adds an op by hand (for shapes the builder does not make).
inline Op& add_op(Graph& graph, const std::string& name, const std::string& type,
                  std::vector<OpArg> args, AttrMap attrs, std::vector<std::int64_t> shape) {
  Op op;
  op.name = name;
  op.type = type;
  op.args = std::move(args);
  op.attrs = std::move(attrs);
  op.output.name = name;
  op.output.shape = std::move(shape);
  return graph.add_op(std::move(op));
}

// A float const not followed by a fix (the quantizer's scale constants).
inline void add_raw_const(Graph& graph, const std::string& name, std::vector<std::int64_t> shape,
                          const std::vector<float>& values) {
  std::vector<std::int32_t> dims(shape.begin(), shape.end());
  Op& op = add_op(graph, name, "const", {},
                  {{"shape", dims}, {"data_type", std::string("float32")}}, shape);
  set_const_values(op, values);
}

// Appends `name_fix` after op `name` and returns the fix's name.
inline std::string add_fix(Graph& graph, const std::string& name, int fix_point,
                           RoundMode mode = RoundMode::Dpu) {
  Op fix = make_fix_op(name + "_fix", name, fix_point, mode);
  fix.output.shape = graph.op(name).output.shape;
  graph.add_op(std::move(fix));
  return name + "_fix";
}

}  // namespace dpushard::testing
