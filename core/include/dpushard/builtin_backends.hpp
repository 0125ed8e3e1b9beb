#pragma once
// Every backend this build has, registered in one call. `ref` is always there (it lives in
// dpushard_exec); `sim` always; `cpu` where oneDNN was found (DPUSHARD_WITH_ONEDNN); `vart`
// where Vitis AI's runtime was (DPUSHARD_WITH_VART). Programs and tests call it once at
// startup, link dpushard_backends, and then ask the registry (make_backend, backend_names)
// rather than knowing which backends were built.

namespace dpushard {

// Adds every built-in backend to the registry of dpushard/backend.hpp. Idempotent.
void register_builtin_backends();

// The hidden subcommand `dpu-child`: the vart backend's DPU process, which a vart worker
// starts from its own executable (docs/vart.md); not in the user's help. Programs check it
// first thing in main(). Without the vart backend in this build, run_dpu_child_command
// prints one error line and returns 2.
bool is_dpu_child_command(int argc, char** argv);
int run_dpu_child_command(int argc, char** argv);

}  // namespace dpushard
