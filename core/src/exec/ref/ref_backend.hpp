#pragma once
// The `ref` backend: plain loops computing the DPU's exact integer arithmetic, the
// definition every other backend is checked against (docs/numerics.md).

#include <memory>

#include "dpushard/exec/backend.hpp"

namespace dpushard {

std::unique_ptr<Backend> make_ref_backend(const BackendOptions& options);

// Its registration (the registry starts with it: dpushard_exec owns `ref`).
BackendDescriptor ref_backend_descriptor();

}  // namespace dpushard
