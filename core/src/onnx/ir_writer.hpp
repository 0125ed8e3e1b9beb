#pragma once
// Writes the float IR graph the importer produces: the `_int` form's op types and
// attributes (docs/ir.md) with float32 `const` weights and no `fix` ops. Names are made
// unique; shapes are inferred as ops are added.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard::onnximport {

class IrWriter {
 public:
  explicit IrWriter(std::string graph_name) : graph_(std::move(graph_name)) {}

  // A unique op name derived from `hint` (ONNX node names are not always unique).
  std::string unique(const std::string& hint);

  std::string data(const std::string& hint, const std::vector<std::int64_t>& shape);
  std::string constant(const std::string& hint, const std::vector<std::int64_t>& shape,
                       const std::vector<float>& values);
  // Adds an op of `type`, infers its shape, returns its name.
  std::string op(const std::string& hint, const std::string& type, std::vector<OpArg> args,
                 AttrMap attrs = {});

  const std::vector<std::int64_t>& shape(const std::string& op) const;
  Graph& graph() { return graph_; }

  // Removes every op no output depends on (materialized layouts nobody used, ...).
  void prune(const std::vector<std::string>& outputs);

 private:
  Graph graph_;
  std::set<std::string> names_;
};

std::vector<std::int32_t> to_i32(const std::vector<std::int64_t>& values);

}  // namespace dpushard::onnximport
