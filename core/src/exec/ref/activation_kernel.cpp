// Elementwise kernels over one fixed tensor: a standalone activation (relu, relu6,
// leaky-relu, and the float ones) or a fix over an already fixed tensor (a rescale). The
// input q is the accumulator at scale fp_in; the epilogue does the rest.

#include <string>

#include "../lowering/epilogue.hpp"
#include "kernels.hpp"

namespace dpushard::ref {

namespace {

class ElementwiseKernel final : public Kernel {
 public:
  ElementwiseKernel(SlotId in, Epilogue epilogue, SlotId out)
      : in_(in), epilogue_(epilogue), out_(out) {}

  void run(Slots& slots) override {
    const auto& x = slots[in_].data;
    auto& y = slots[out_].data;
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = epilogue_(x[i]);
  }

 private:
  SlotId in_;
  Epilogue epilogue_;
  SlotId out_;
};

}  // namespace

std::unique_ptr<Kernel> make_elementwise(const Chain& chain, const Lowering& lowering, SlotId in) {
  const QTensor& x = lowering.slot(in);
  const QTensor& y = lowering.slot(chain.out);
  if (element_count(x.shape) != element_count(y.shape))
    fail(chain.producer,
         "input " + shape_text(x.shape) + " and output " + shape_text(y.shape) + " differ in size");
  return std::make_unique<ElementwiseKernel>(in, Epilogue(chain, x.fix_point), chain.out);
}

}  // namespace dpushard::ref
