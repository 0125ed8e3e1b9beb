#include "kernels.hpp"

namespace dpushard::ref {

lowering::KernelSet kernel_set() {
  lowering::KernelSet set;
  set.conv = make_conv;
  set.matmul = make_matmul;
  set.add = make_add;
  set.mul = make_mul;
  set.maxpool = make_maxpool;
  set.avgpool = [](const Chain& chain, const Lowering& lowering) {
    return make_avgpool(chain, lowering, chain.producer, nullptr);
  };
  set.concat = make_concat;
  set.softmax = make_softmax;
  set.layernorm = make_layernorm;
  set.elementwise = make_elementwise;
  set.layout = make_layout;
  set.stack = make_stack;
  return set;
}

}  // namespace dpushard::ref
