// dpushard compile-only stand-in (tests/vart_api/README.md): Xilinx XIR's
// xir/graph/subgraph.hpp, reduced to what core/src/exec/vart uses. Never linked.
#pragma once
#include <string>
#include <vector>

#include "xir/util/any.hpp"

namespace xir {

class Subgraph {
 public:
  virtual const std::string get_name() const = 0;
  virtual bool has_attr(const std::string& key) const = 0;
  virtual const xir::any get_attr(const std::string& key) const = 0;

  // The real template aborts the process on a type mismatch instead of throwing.
  template <typename Dtype>
  const Dtype get_attr(const std::string& key) const {
    return stdx::any_cast<Dtype>(this->get_attr(key));
  }

  virtual std::vector<Subgraph*> children_topological_sort() = 0;
  virtual const std::vector<const Subgraph*> children_topological_sort() const = 0;

  virtual ~Subgraph() = default;
};

}  // namespace xir
