#pragma once
// A float CPU tail after a compiled model's DPU subgraph, laid out as vai_c_xir lays out what
// the DPU cannot run (VITIS_AI.md section 4; the ops and attributes are XIR 3.5's
// built_in_ops.cpp): the DPU output's `fix2float`, then float ops, each closed by a `float2fix`
// (and a `fix2float` for the model's float output) or leaving the model as float. The `_int`
// file it was compiled from gets the same ops as `op -> fix` chains, so that both compute the
// same int8 values (docs/xmodel.md "Float ops in CPU subgraphs").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard::testing {

class FloatCpuTail {
 public:
  // `compiled`'s one output must be the fix2float after its DPU output, `int_graph`'s one
  // output the fix op it was compiled from.
  FloatCpuTail(Graph& compiled, Graph& int_graph);

  // A float op `type` reading the DPU output `inputs` times (once, or twice for add/concat):
  // with `float2fix`, closed by a float2fix at that fix_point then a fix2float, else a float
  // output; the `_int` file's fix after it is at `int_fix_point`.
  void add(const std::string& name, const std::string& type, int inputs, AttrMap attrs,
           std::vector<std::int64_t> shape, std::optional<int> float2fix, int int_fix_point);
  // Only the compiled op (for error tests): a CPU op reading the DPU output once.
  void add_compiled_only(const std::string& name, const std::string& type, AttrMap attrs);

  int fix_point() const { return fix_point_; }  // of the DPU output
  const std::vector<std::int64_t>& shape() const { return shape_; }

 private:
  void add_compiled(const std::string& name, const std::string& type,
                    const std::vector<std::string>& inputs, AttrMap attrs,
                    std::vector<std::int64_t> shape, std::optional<int> fix_point);
  Graph& compiled_;
  Graph& int_graph_;
  std::string f2f_, int_out_;
  int fix_point_ = 0;
  std::vector<std::int64_t> shape_;
};

}  // namespace dpushard::testing
