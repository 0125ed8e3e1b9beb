#pragma once
// The `vart` backend: runs compiled fragments on a real DPU through Vitis AI's runtime
// (VART and XIR; docs/vart.md). It lives in its own library, dpushard_exec_vart, built only
// with -DDPUSHARD_WITH_VART=ON where that runtime is installed (the KV260 board image, the
// Vitis AI docker). Programs call register_builtin_backends() once at startup, after
// which make_backend("vart", options) finds it; without it make_backend("vart") says how to build
// it. BackendOptions::threads sets how many DPU runners (one per concurrent caller) it opens.
//
// load() takes a fragment compiled by vai_c_xir whose only DPU subgraph computes the whole
// fragment (see core/src/exec/vart/dpu_binding.hpp); run() takes the same int8 NHWC inputs
// as every backend and returns the DPU's int8 outputs with the runner's fix points.
//
// make_vart_backend (what "vart" names) runs VART in a supervised child process, so that a
// DPU that hangs or a VART check that aborts costs a frame, not the process
// (core/src/exec/vart/dpu_child.hpp); make_vart_backend_in_process runs it in the caller's
// process (what the child itself runs, and tests that inspect the runner). The child is the
// program's own executable run as `dpu-child` (run_dpu_child): every program that makes a
// "vart" backend must hand that argument to run_dpu_child first thing in main().

#include <memory>

#include "dpushard/exec/backend.hpp"

namespace dpushard {

// Adds "vart" to the backend registry. Idempotent.
void register_vart_backend();

std::unique_ptr<Backend> make_vart_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_vart_backend_in_process(const BackendOptions& options);

// The DPU process (`PROGRAM dpu-child ...`, argv[1] == "dpu-child"), which a vart backend
// starts; never by hand. Returns the exit status for a bad invocation, else never returns.
int run_dpu_child(int argc, char** argv);

}  // namespace dpushard
