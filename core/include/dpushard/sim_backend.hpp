#pragma once
// The `sim` backend: a frame completes after the KV260 timing model's time for the loaded
// graph (dpushard/perf.hpp). It lives in its own library, dpushard_exec_sim, because it
// needs both exec and perf; programs that want it call register_sim_backend() once at
// startup, after which make_backend("sim", options) finds it.
//
// Timing: the modeled DPU+CPU time of a frame is reserved on one engine per backend
// (frames from concurrent callers queue behind each other, so several in flight see the
// steady-state rate), and the per-frame host overhead is added on top without queueing
// (one caller at a time sees the one-thread latency). run() returns at that deadline on the
// steady clock. Options: BackendOptions::sim_target, BackendOptions::sim_numerics.

#include <memory>

#include "dpushard/backend.hpp"
#include "dpushard/perf.hpp"

namespace dpushard {

// Adds "sim" to the backend registry. Idempotent.
void register_sim_backend();

std::unique_ptr<Backend> make_sim_backend(const BackendOptions& options);

// The prediction the sim backend `backend` times its frames by (after load()); throws when
// `backend` is not a sim backend or nothing is loaded.
const Prediction& sim_prediction(const Backend& backend);

}  // namespace dpushard
