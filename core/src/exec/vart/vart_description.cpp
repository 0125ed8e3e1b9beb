#include "vart_description.hpp"

namespace dpushard {

BackendDescriptor vart_backend_description() {
  BackendDescriptor d;
  d.name = "vart";
  d.summary = "the KV260 DPU";
  d.traits = {CompiledModels::Required, DeviceKind::Dpu, false, false, true};
  d.not_built = "configure with -DDPUSHARD_WITH_VART=ON where Vitis AI's runtime is installed";
  return d;
}

}  // namespace dpushard
