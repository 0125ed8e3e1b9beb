#pragma once
// Every backend this build has, registered in one call. `ref` is always there (it lives in
// dpushard_exec); `sim` always; `cpu` where oneDNN was found (DPUSHARD_WITH_ONEDNN); `vart`
// where Vitis AI's runtime was (DPUSHARD_WITH_VART). Its definition is generated from the
// backend folders' dpushard_backend() declarations (cmake/backends.cmake). Programs and tests
// call it once at startup, link dpushard_builtin_backends, and then ask the registry (make_backend,
// backend_names, backend_command) rather than knowing which backends were built.

namespace dpushard {

// Adds every built-in backend to the registry of dpushard/exec/backend.hpp. Idempotent.
void register_builtin_backends();

}  // namespace dpushard
