#pragma once
// ONNX nodes as the importer works on them: a copy of the NodeProto's names and
// attributes that fusion passes can also create (a LayerNormalization or Gelu standing
// for the decomposed form torch exports).

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "const_tensor.hpp"

namespace onnx {
class NodeProto;
}

namespace dpushard::onnximport {

using NodeAttr = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>,
                              std::vector<double>, ConstTensor>;

struct Node {
  std::string type;
  std::string name;
  std::vector<std::string> inputs;  // "" = optional input left out
  std::vector<std::string> outputs;
  std::map<std::string, NodeAttr> attrs;

  // "Conv node '/layer1/Conv'": how errors name a node.
  std::string who() const;

  bool has(const std::string& key) const { return attrs.count(key) != 0; }
  std::int64_t attr_int(const std::string& key, std::int64_t fallback) const;
  double attr_float(const std::string& key, double fallback) const;
  std::string attr_string(const std::string& key, const std::string& fallback) const;
  std::vector<std::int64_t> attr_ints(const std::string& key,
                                      const std::vector<std::int64_t>& fallback) const;
  const ConstTensor& attr_tensor(const std::string& key) const;

  // Input `i` when present and non-empty, else "".
  const std::string& input(std::size_t i) const;
};

Node node_from_proto(const onnx::NodeProto& proto);

}  // namespace dpushard::onnximport
