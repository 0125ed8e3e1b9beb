#pragma once
// One execution interface, several implementations, each registered once with a descriptor
// (name, factory, device probe, traits, its own options) and chosen by name. Code that needs
// to know what a backend does asks its traits, never its name (docs/extending.md). Every
// backend is tested against `ref` by the same parametrised test (tests/exec/backends_test.cpp).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard {

// One frame's tensors in memory a backend owns (Backend::frame_memory): vart's memory shared
// with its DPU process. Each span is one tensor's dense int8 bytes, sized to its shape.
struct FrameMemory {
  std::vector<std::span<std::int8_t>> inputs;         // graph.inputs() order
  std::vector<std::span<const std::int8_t>> outputs;  // graph.outputs() order
};

// State every backend of one name in a process shares, made once by its descriptor's
// prepare() (sim: the modeled board whose DPU all of a worker's fragments queue for).
struct BackendShared {
  virtual ~BackendShared() = default;
};

struct BackendOptions {
  int threads = 1;  // worker threads for backends that use them (cpu)
  // The backend's own options, by the keys its descriptor lists (BackendDescriptor::options;
  // sim: numerics, target, fail-frames). make_backend refuses a key the backend does not list.
  std::map<std::string, std::string> settings;
  // From the descriptor's prepare(); null: the backend makes its own.
  std::shared_ptr<BackendShared> shared;
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

// The accelerator a backend runs on, as a worker reports it in its handshake
// (docs/protocol.md): for vart the DPU's fingerprint (what `xdputil query` reports and what a
// compiled subgraph's `dpu_fingerprint` must equal) and the runner's batch. Backends without
// a device (ref, cpu, sim) have no probe and report zeros.
struct DeviceInfo {
  std::uint64_t dpu_fingerprint = 0;  // 0: no DPU
  std::uint32_t dpu_batch = 0;        // 0: not known
  bool operator==(const DeviceInfo&) const = default;
};

using BackendFactory = std::function<std::unique_ptr<Backend>(const BackendOptions&)>;
using DeviceProbe = std::function<DeviceInfo(const BackendOptions&)>;

// What a backend does with a compiled xmodel (vai_c_xir's output: `*-fix` ops, DPU
// subgraphs). The one answer to "does it run compiled files?" (docs/extending.md).
enum class CompiledModels {
  Lowered,   // runs `_int` ops; a compiled file is lowered to them first (lower_compiled.hpp)
  Accepted,  // loads a compiled file as it is, and `_int` files too (sim times either)
  Required,  // runs compiled files only: a cluster ships its node the compiled fragments
};

// Where a backend's frames run, as the report and the bench label their times.
enum class DeviceKind {
  HostCpu,     // the host's own CPU (ref, cpu): measured, not a DPU's time
  ModeledDpu,  // no device: the timing model's time for a target (sim)
  Dpu,         // a real DPU (vart)
};

struct BackendTraits {
  CompiledModels compiled = CompiledModels::Lowered;
  DeviceKind device = DeviceKind::HostCpu;
  // Frames take the timing model's time, not the host's: times are modeled, and outputs
  // may be marked not computed (QTensor::computed) unless the backend is asked for them.
  bool models_time = false;
  // Reads a target (a built-in name or a target YAML, `dpushard predict --target`): the
  // option keyed "target" in its settings, and a cluster.yaml node's `target`.
  bool needs_target = false;
  // Computes the DPU's outputs bit-identically to `ref` (the conformance test holds it to
  // that; sim does with its "numerics" option). False: outputs are placeholders.
  bool computes_outputs = true;
};

// One of a backend's own options: a key of BackendOptions::settings, and the command-line
// flag(s) that set it on the commands that make that backend (`worker`).
struct BackendOptionSpec {
  std::string key;            // "numerics"
  std::string flags;          // CLI11 names: "--sim-numerics", "--target,--sim-target"
  std::string help;           // one line
  std::string default_value;  // as text; "false" for a flag
  bool flag = false;          // given without a value: "true" when present
  bool hidden = false;        // for tests only: not in --help
};

// Once per process, before a backend of this name is made for serving (a worker): checks the
// settings (a bad target fails now, not per job), makes the shared state and says how many
// compute threads suit the backend when none were asked for.
struct BackendSetup {
  std::shared_ptr<BackendShared> shared;
  int threads = 1;
};
using BackendPrepare = std::function<BackendSetup(const BackendOptions&)>;

// One registration per backend (docs/extending.md, "A backend").
struct BackendDescriptor {
  std::string name;     // what --backend and cluster.yaml call it
  std::string summary;  // one line: where its frames run ("the host CPU, oneDNN int8")
  BackendTraits traits;
  std::vector<BackendOptionSpec> options;  // its own options; none is shared with another
  // The factory; null: the backend is known but not built here (`not_built` says how), so
  // cluster.yaml and results may still name it and its traits still answer.
  BackendFactory make;
  std::string not_built;
  // Availability: the device it runs on (null: no device, zeros). Throws dpushard::Error when
  // the device cannot be read (a vart worker without a DPU).
  DeviceProbe probe;
  BackendPrepare prepare;  // null: no shared state, one thread
  // Whether load() takes `graph`, asked without making or loading a backend (as ggml's
  // supports_op): empty when it does, else one line saying why not (an op it lacks, a form it
  // does not read). Null: it takes every valid graph. The conformance test skips the cases a
  // backend declines here (tests/exec/backends_test.cpp).
  std::function<std::string(const Graph& graph)> unsupported;
  // A hidden subcommand of the program, for a process the backend starts from the program's
  // own executable (vart: "dpu-child", its DPU process, docs/vart.md); empty: none. Programs
  // hand it over first thing in main() (backend_command). `run_command` is its main(), null
  // where the backend is not built here.
  std::string command;
  std::function<int(int argc, char** argv)> run_command;
};

// Adds a backend (once, at startup: register_builtin_backends() in dpushard/
// builtin_backends.hpp). A second registration of a name replaces the first. `ref` and the
// description of `vart` are there from the start (they live in dpushard_exec).
void register_backend(BackendDescriptor descriptor);
// The descriptor of `name`; null when no backend of that name is known.
std::shared_ptr<const BackendDescriptor> find_backend(std::string_view name);
// The descriptor of `name`; throws dpushard::Error listing the known names.
std::shared_ptr<const BackendDescriptor> backend_descriptor(std::string_view name);
// Every known backend, built here or not, in registration order.
std::vector<std::shared_ptr<const BackendDescriptor>> backend_descriptors();
// The traits of `name`; throws dpushard::Error listing the known names.
BackendTraits backend_traits(std::string_view name);
// "cpu, ref, sim, vart": every known name, or only those built here, sorted.
std::string backend_names_text(bool built_only);
// A backend's settings as its options give them: every key listed, defaults filled in.
// Throws dpushard::Error naming the backend for a key it does not list.
std::map<std::string, std::string> backend_settings(std::string_view name,
                                                    const BackendOptions& options);
// The settings value `key` as a boolean ("true"/"false"); throws naming `backend`.
bool setting_flag(const std::map<std::string, std::string>& settings, const std::string& key,
                  std::string_view backend);
// prepare() of backend `name` (a default BackendSetup when it has none).
BackendSetup prepare_backend(std::string_view name, const BackendOptions& options);

// The device backend `name` runs on; zeros for a backend without a probe. Throws
// dpushard::Error when the probe cannot read the device (a vart worker without a DPU).
DeviceInfo probe_device(std::string_view name, const BackendOptions& options = {});
// "0x101000016010407" (the form xdputil prints), or "none" for 0.
std::string fingerprint_text(std::uint64_t fingerprint);
// Parses "0x..." hex (or decimal); throws dpushard::Error naming `what` on bad input.
std::uint64_t parse_fingerprint(std::string_view text, std::string_view what);

// The backend whose hidden subcommand (BackendDescriptor::command) argv[1] names; null when
// argv[1] names none. Programs ask first thing in main(), after register_builtin_backends().
std::shared_ptr<const BackendDescriptor> backend_command(int argc, char** argv);
// Runs that subcommand and returns its exit status; where the backend is not built here,
// prints one error line and returns 2.
int run_backend_command(const BackendDescriptor& backend, int argc, char** argv);

// Names of the backends built into this program ("ref", "cpu", ...).
std::vector<std::string> backend_names();
// Creates a backend by name; throws dpushard::Error listing the known names, or saying how
// to build a backend that is known but not built here.
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
