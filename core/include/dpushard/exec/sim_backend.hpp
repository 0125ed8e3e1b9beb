#pragma once
// The `sim` backend: a frame completes after the timing model's time for the loaded graph
// on the target (dpushard/perf/perf.hpp), as a dpushard worker (network io) would spend it. It
// lives in its own library, dpushard_exec_sim, because it needs both exec and perf; programs call
// register_builtin_backends() (dpushard/exec/builtin_backends.hpp) once at startup, after which
// make_backend("sim", options) finds it.
//
// Timing: a frame's DPU time is reserved on the first free of the target's `dpu.cores`
// modeled DPU cores, then its CPU ops and host work (Prediction::cpu_ms + host_ms) on the
// first free of `host.cores` A53 cores; its TCP time (net_ms) on the one network thread runs
// alongside. One caller at a time sees max(dpu + cpu + host, net) per frame (worker_ms);
// several concurrent callers see the steady-state rate (frame_ms). run() returns at that
// deadline on the steady clock.
//
// Its own options (BackendOptions::settings, listed in its descriptor): "target" (a built-in
// target name or a target YAML file, default kv260), "numerics" ("true": also compute the
// real outputs, on the cpu backend where built, else ref; otherwise outputs have the right
// shapes but are marked QTensor::computed = false) and "fail-frames" (tests only: every
// frame fails with a DeviceError, as a board whose DPU keeps failing would).
//
// A board is the hardware those reservations are made on. A worker gives every fragment it
// runs the same board (BackendOptions::shared, from the descriptor's prepare()), so two
// fragments on one node queue for its one DPU as they would on a KV260; a backend without
// one gets a board of its own.

#include <memory>

#include "dpushard/exec/backend.hpp"
#include "dpushard/perf/perf.hpp"

namespace dpushard {

// The modeled hardware of one board of `target`: its `dpu.cores` DPU cores, `host.cores`
// A53 cores and one network thread. Thread-safe; share it through BackendOptions::shared.
struct SimBoard;
std::shared_ptr<BackendShared> make_sim_board(const Target& target);

// Adds "sim" to the backend registry. Idempotent.
void register_sim_backend();

std::unique_ptr<Backend> make_sim_backend(const BackendOptions& options);

// The prediction the sim backend `backend` times its frames by (after load()); throws when
// `backend` is not a sim backend or nothing is loaded.
const Prediction& sim_prediction(const Backend& backend);

}  // namespace dpushard
