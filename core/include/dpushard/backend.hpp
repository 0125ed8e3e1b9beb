#pragma once
// One execution interface, several implementations (ref, cpu, sim, vart), chosen by name.
// Every backend is tested against `ref` by the same parametrised test (tests/exec/
// backends_test.cpp): cpu and sim always, vart on the VART double where tests/vart builds it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/error.hpp"
#include "dpushard/graph.hpp"
#include "dpushard/tensor.hpp"

namespace dpushard {

struct SimBoard;  // dpushard/sim_backend.hpp

// One frame's tensors in memory a backend owns (Backend::frame_memory): vart's memory shared
// with its DPU process. Each span is one tensor's dense int8 bytes, sized to its shape.
struct FrameMemory {
  std::vector<std::span<std::int8_t>> inputs;         // graph.inputs() order
  std::vector<std::span<const std::int8_t>> outputs;  // graph.outputs() order
};

struct BackendOptions {
  int threads = 1;  // worker threads for backends that use them (cpu)
  // sim: also compute the real outputs (with the cpu backend, or ref without it); without
  // it outputs have the right shapes but are marked QTensor::computed = false.
  bool sim_numerics = false;
  std::string sim_target = "kv260";  // sim: a built-in target name or a target YAML file
  // sim: the modeled board (DPU cores, A53 cores, network thread) whose time this backend's
  // frames reserve, shared by every fragment a worker runs as they share one KV260; null:
  // a board of its own (make_sim_board in dpushard/sim_backend.hpp).
  std::shared_ptr<SimBoard> sim_board;
  // sim, for tests only (`worker --sim-fail-frames`): every frame fails with a DeviceError,
  // as a board whose DPU keeps failing would, so a cluster's handling of it can be tested.
  bool sim_fail_frames = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // Prepares `graph` for execution: validates it, quantizes weights, plans buffers.
  // All per-model work happens here, none per frame. Throws dpushard::Error naming the
  // op it cannot run.
  virtual void load(const Graph& graph) = 0;

  // Runs one frame. `inputs` follow the order of graph.inputs() and carry the int8 values
  // after each input's fix op; outputs follow graph.outputs(). Shape or fix_point
  // mismatches throw dpushard::Error naming the input.
  virtual std::vector<QTensor> run(const std::vector<QTensor>& inputs) = 0;

  // Runs one frame whose inputs were all present at `ready`, which may be before the call
  // (a worker's frame that waited for the one before it). Backends that model time (sim)
  // start its modeled work there, so the host's own delay in calling them does not add to
  // modeled time; the others just run it.
  virtual std::vector<QTensor> run_ready(const std::vector<QTensor>& inputs,
                                         std::chrono::steady_clock::time_point ready) {
    (void)ready;
    return run(inputs);
  }

  // Optional zero-copy path, for backends whose frames cross into memory of their own (vart's
  // DPU process): the caller writes a frame's inputs straight into frame_memory()->inputs,
  // calls run_in_place(), and reads the outputs from frame_memory()->outputs, which hold them
  // until the next call. One frame at a time; the memory is valid until the next load().
  // nullptr (the default): use run().
  virtual const FrameMemory* frame_memory() const { return nullptr; }
  // Runs the frame written into frame_memory()->inputs; returns the outputs' name, shape and
  // fix_point, with empty data (their bytes are in frame_memory()->outputs).
  virtual std::vector<QTensor> run_in_place() {
    throw Error("backend '" + std::string(name()) + "' has no frame memory: use run()");
  }

  // Frames the device's runner takes per job, as the device reported it at load() (vart:
  // the first dimension of VART's runner input tensor). 0 for backends without a device.
  virtual std::uint32_t runner_batch() const { return 0; }
};

// Backends that live outside dpushard_exec (sim needs the timing model, a sibling module)
// add themselves at startup through this hook; see docs/perf.md. A second registration of
// a name replaces the first.
using BackendFactory = std::function<std::unique_ptr<Backend>(const BackendOptions&)>;
void register_backend(const std::string& name, BackendFactory factory);

// The accelerator a backend runs on, as a worker reports it in its handshake
// (docs/protocol.md): for vart the DPU's fingerprint (what `xdputil query` reports and what a
// compiled subgraph's `dpu_fingerprint` must equal) and the runner's batch. Backends without
// a device (ref, cpu, sim) have no probe and report zeros.
struct DeviceInfo {
  std::uint64_t dpu_fingerprint = 0;  // 0: no DPU
  std::uint32_t dpu_batch = 0;        // 0: not known
  bool operator==(const DeviceInfo&) const = default;
};
using DeviceProbe = std::function<DeviceInfo(const BackendOptions&)>;
// Registers how to ask backend `name` for its device (once, at startup, with the backend).
void register_device_probe(const std::string& name, DeviceProbe probe);
// The device backend `name` runs on; zeros for a backend without a probe. Throws
// dpushard::Error when the probe cannot read the device (a vart worker without a DPU).
DeviceInfo probe_device(std::string_view name, const BackendOptions& options = {});
// "0x101000016010407" (the form xdputil prints), or "none" for 0.
std::string fingerprint_text(std::uint64_t fingerprint);
// Parses "0x..." hex (or decimal); throws dpushard::Error naming `what` on bad input.
std::uint64_t parse_fingerprint(std::string_view text, std::string_view what);

// Names of the backends compiled into this build ("ref", "cpu", ...).
std::vector<std::string> backend_names();
// Creates a backend by name; throws dpushard::Error listing the known names.
std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options = {});

// The int8 input specs of a graph (name = data op's fix op, shape, fix_point), in order. In
// a compiled graph the `data-fix` input op is its own spec (its output tensor's fix_point).
std::vector<QTensor> input_specs(const Graph& graph);

// The checks every backend makes on a frame's inputs, with one wording: as many inputs as
// the graph has, and each with the expected shape and fix_point and data sized to the
// shape. Throw dpushard::Error "<who>: ..." on the first mismatch.
void check_input_count(std::string_view who, std::size_t given, std::size_t expected);
void check_input(std::string_view who, const std::string& name,
                 const std::vector<std::int64_t>& shape, int fix_point, const QTensor& input);

}  // namespace dpushard
