#include "cpu_description.hpp"

namespace dpushard {

BackendDescriptor cpu_backend_description() {
  BackendDescriptor d;
  d.name = "cpu";
  d.summary = "the host CPU, oneDNN int8: bit-identical to ref";
  d.traits = {CompiledModels::Lowered, DeviceKind::HostCpu, false, false, true};
  d.not_built = "configure with -DDPUSHARD_WITH_ONEDNN=ON where oneDNN (libdnnl-dev) is installed";
  return d;
}

}  // namespace dpushard
