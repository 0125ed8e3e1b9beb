#pragma once
// A link-time test double of VART's runner (tests/vart/README.md): it defines
// vart::Runner::create_runner, which on a board loads the DPU runner library, on top of the
// real XIR and the real runner library's TensorBuffer base. The runner it returns
//   - is a vart::RunnerExt whose buffers are host memory laid out as the edge DPU runner's:
//     one allocation per batch entry, data(idx) giving the entry's address and the bytes left
//     in it, and a separate "device" copy that only sync_for_write / sync_for_read move data
//     to and from (a missing sync shows as stale data);
//   - or, when asked, a plain vart::Runner that copies the caller's host buffers;
//   - has tensors of its own with the DPU's batch (not the file's) and the subgraph's
//     fix_point attributes, in an order of its own;
//   - computes each job with dpushard's `ref` backend, in execute_async, on the matching `_int`
//     fragment when one is given, else on the DPU subgraph's own ops lowered to `_int` ops
//     (lower_compiled.hpp; the weights from the const-fix ops or from a given `_int` file), and
//     returns from wait at once (the edge DPU's behaviour);
//   - can take a board's time: with a timing target, each job lasts what that target's timing
//     model gives the compiled graph (DPU time plus the host's fixed and copy costs per batch
//     entry), as a board calibrated to those figures would (`dpushard calibrate`'s test);
//   - can inject a failure into one job: a status code, an exception, an abort (glog FATAL,
//     as VART does), or a hang (sleep XLNX_DPU_TIMEOUT ms, then abort, as the DPU
//     controller does).
// It also stands in for `xdputil query` (core/src/exec/vart/dpu_query.hpp): query_dpu()
// reports the settings' fingerprint and batch.
// Settings come from the environment (for the command line) or from set_settings, which also
// exports them to the environment (the graphs as files in a temporary folder), so that the
// DPU processes a supervised backend starts (its own executable, exec'd) get them too.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dpushard/graph/graph.hpp"
#include "dpushard/perf/perf.hpp"

namespace dpushard::vart_double {

enum class FaultKind { None, Status, Throw, Abort, Hang, Stall };

struct Settings {
  // The `_int` fragment whose ref result a job returns (DPUSHARD_VART_DOUBLE_INT: a file).
  // Without it a job computes the runner's DPU subgraph from its ops (lower_compiled).
  std::optional<Graph> int_graph;
  // More `_int` fragments, each used for the compiled graph of its name (several fragments in
  // one DPU process); in-process settings only.
  std::vector<Graph> int_graphs;
  // Without int_graph: the `_int` file the compiled one was made from, for weights the
  // compiled file does not carry (DPUSHARD_VART_DOUBLE_WEIGHTS: a file).
  std::optional<Graph> weights_graph;
  int batch = 1;  // the DPU's batch (DPUSHARD_VART_DOUBLE_BATCH)
  // The DPU's fingerprint, what query_dpu() (the worker's handshake) reports
  // (DPUSHARD_VART_DOUBLE_FINGERPRINT, hex); by default the KV260's B4096 (docs/vart.md).
  std::uint64_t fingerprint = 0x101000016010407;
  bool plain_runner = false;     // not a RunnerExt (DPUSHARD_VART_DOUBLE_PLAIN=1)
  bool reverse_tensors = false;  // tensors in reverse graph order (DPUSHARD_VART_DOUBLE_REVERSE=1)
  // DPUSHARD_VART_DOUBLE_FAULT=status|throw|abort|hang|stall[@N]: job N (1-based, counted
  // over the whole process; default 1) fails that way. stall: never returns (a DPU whose
  // controller does not time out either).
  FaultKind fault = FaultKind::None;
  int fault_job = 1;
  int fault_status = 3;  // the status execute_async returns for FaultKind::Status
  // When set, the fault fires once across processes (a DPU process and the ones restarted
  // after it): only if this file does not exist yet, which the double then creates.
  std::string fault_marker;
  // A DPU that takes no time: jobs skip the arithmetic (outputs keep the device copy's old
  // bytes; the runner does not even prepare it, so any compiled graph loads). For benchmarks
  // of the host side (bench_vart_child) and timing tests with a timing target (below);
  // DPUSHARD_VART_DOUBLE_NULL_JOBS=1.
  bool null_jobs = false;
  // A DPU process that cannot start: while this file exists, create_runner appends a line to
  // it and throws, as a runner library that cannot open the DPU does
  // (DPUSHARD_VART_DOUBLE_BROKEN_WHILE).
  std::string broken_while;
  // With broken_while: create_runner never returns instead of throwing, as a runner library
  // stuck opening the DPU (DPUSHARD_VART_DOUBLE_BROKEN_HANGS=1).
  bool broken_hangs = false;
  // DPUSHARD_VART_DOUBLE_TIMING (a target YAML file): each job takes batch x (dpu_ms +
  // host_ms) of that target's prediction of the runner's graph (network io: per_frame_us and
  // the copies, no TCP), from execute_async's call to its return (the arithmetic inside it).
  // Read from the environment only (the exec'd DPU process inherits it; set_settings does
  // not export it).
  std::optional<Target> timing;
};

// Reads the DPUSHARD_VART_DOUBLE_* variables; throws dpushard::Error on a bad value.
Settings settings_from_environment();
// In-process tests: these settings instead of the environment's, for runners created later,
// here and in DPU processes started later. Call it before starting threads that read the
// environment (it sets variables); clear_settings removes them and the files.
void set_settings(Settings settings);
void clear_settings();

// What runners did, for tests to check (process-wide, thread-safe).
struct SyncCall {
  std::string tensor;
  bool for_write = false;  // sync_for_write (true) or sync_for_read
  std::uint64_t offset = 0;
  std::size_t size = 0;
};
struct Journal {
  int runners = 0;  // create_runner calls
  int jobs = 0;     // execute_async calls
  std::vector<SyncCall> syncs;
};
Journal journal();
void clear_journal();

}  // namespace dpushard::vart_double
