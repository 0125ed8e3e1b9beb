#pragma once
// The `cpu` backend: the ref backend's lowering with conv2d / depthwise-conv2d / matmul /
// inner-product on oneDNN int8 and vectorised add / maxpool, bit-identical to `ref`
// (docs/cpu_backend.md has the exactness argument). It lives in its own library,
// dpushard_exec_cpu (built with DPUSHARD_WITH_ONEDNN); programs call register_builtin_backends()
// (dpushard/exec/builtin_backends.hpp) once at startup, after which make_backend("cpu", options)
// finds it.
// BackendOptions::threads sets the OpenMP thread count (oneDNN's and the backend's loops)
// for whichever thread calls run(); one run() at a time per backend.

#include <memory>

#include "dpushard/exec/backend.hpp"

namespace dpushard {

// Adds "cpu" to the backend registry. Idempotent.
void register_cpu_backend();

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

}  // namespace dpushard
