// The rewrite Vitis AI's quantizers apply so that sigmoid-family activations run on the
// DPUCZDX8G (docs/import.md "Sigmoid, SiLU and the DPU"): vai_q_pytorch's
// convert_sigmoid_to_hsigmoid / convert_silu_to_hswish options, vai_q_tensorflow2's
// default convert_sigmoid_to_hard_sigmoid. Sigmoid and tanh are CPU-only XIR types;
// hard-sigmoid and hard-swish run on the DPU.

#include <algorithm>
#include <string>
#include <vector>

#include "dpushard/onnx/onnx_import.hpp"

namespace dpushard {
namespace {

// The sigmoid's only consumer when it is mul(x, sigmoid(x)): SiLU / swish.
Op* silu_mul(Graph& g, const Op& sigmoid) {
  const auto& in = sigmoid.producers("input");
  if (in.size() != 1) return nullptr;
  const auto consumers = g.consumers(sigmoid.name);
  if (consumers.size() != 1 || consumers[0]->type != "mul") return nullptr;
  auto operands = consumers[0]->producers("input");
  if (operands.size() != 2) return nullptr;
  std::sort(operands.begin(), operands.end());
  std::vector<std::string> expected = {in[0], sigmoid.name};
  std::sort(expected.begin(), expected.end());
  return operands == expected ? g.find(consumers[0]->name) : nullptr;
}

}  // namespace

HardSigmoidRewrite convert_sigmoid_to_hard(Graph& float_graph) {
  HardSigmoidRewrite done;
  std::vector<std::string> sigmoids;
  for (const Op& op : float_graph.ops())
    if (op.type == "sigmoid") sigmoids.push_back(op.name);
  for (const std::string& name : sigmoids) {
    Op& sigmoid = *float_graph.find(name);
    if (Op* mul = silu_mul(float_graph, sigmoid)) {
      const std::string x = sigmoid.producers("input").at(0);
      mul->type = "hard-swish";
      mul->args = {OpArg{"input", {x}}};
      float_graph.remove_op(name);
      ++done.silu_to_hard_swish;
    } else {
      sigmoid.type = "hard-sigmoid";
      ++done.sigmoid_to_hard_sigmoid;
    }
  }
  return done;
}

}  // namespace dpushard
