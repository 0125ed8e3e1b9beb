// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx XIR's
// xir/graph/graph.hpp, reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <memory>
#include <string>

#include "xir/graph/subgraph.hpp"

namespace xir {

class Graph {
 public:
  static std::unique_ptr<Graph> deserialize(const std::string& file_path);
  static std::unique_ptr<Graph> deserialize_from_string(const std::string& str);

  virtual const Subgraph* get_root_subgraph() const = 0;
  virtual Subgraph* get_root_subgraph() = 0;

  virtual ~Graph() = default;
};

}  // namespace xir
