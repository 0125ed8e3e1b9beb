#pragma once
// What the `cpu` backend is, without oneDNN: its name, traits, summary and how to build it.
// dpushard_exec keeps it, as it keeps vart's, so that a program built without oneDNN (the
// aarch64 board binary) still knows the name in cluster.yaml (a worker elsewhere may have it)
// and says how to build it; register_cpu_backend() adds the factory.

#include "dpushard/exec/backend.hpp"

namespace dpushard {

BackendDescriptor cpu_backend_description();

}  // namespace dpushard
