#pragma once
// What the `vart` backend is, without VART: its name, traits, summary and how to build it.
// dpushard_exec keeps it (beside dpu_binding, the backend's other VART-free part) so that a
// program without VART still knows the name in cluster.yaml and in results from a board, and
// says how to build it; register_vart_backend() adds the factory and the device probe.

#include "dpushard/exec/backend.hpp"

namespace dpushard {

BackendDescriptor vart_backend_description();

}  // namespace dpushard
