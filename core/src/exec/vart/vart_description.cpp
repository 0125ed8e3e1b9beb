#include "vart_description.hpp"

#include <string>

#include "dpu_binding.hpp"
#include "dpu_child.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard {

BackendDescriptor vart_backend_description() {
  BackendDescriptor d;
  d.name = "vart";
  d.summary = "the KV260 DPU";
  d.traits = {CompiledModels::Required, DeviceKind::Dpu, false, false, true};
  d.not_built = "configure with -DDPUSHARD_WITH_VART=ON where Vitis AI's runtime is installed";
  // A fragment whose one DPU subgraph computes it all (dpu_binding.hpp), as load() needs.
  d.unsupported = [](const Graph& graph) {
    try {
      (void)vart_detail::bind_dpu_subgraph(graph);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  d.command = vart_detail::kDpuChildCommand;  // its DPU process; run_dpu_child where built
  return d;
}

}  // namespace dpushard
