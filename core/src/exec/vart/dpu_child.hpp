#pragma once
// The vart backend as a worker runs it: VART in a supervised child process, so that a DPU
// that hangs or a VART check that aborts (glog FATAL: VART and XIR end the process rather
// than throw, docs/vart.md) costs one frame, not the worker.
//
// One child per DPU (DpuProcess::shared(): one per worker process), whatever the number of
// fragments: every loaded fragment (a SupervisedBackend each) is loaded into it, and their
// frames go through it one at a time, as through the KV260's single DPU core. Each fragment
// has its own memory shared with the child (a memfd both map), which holds one frame's
// inputs and outputs: the caller writes the inputs there (directly, through
// Backend::frame_memory, or run() copies them), sends five bytes over a socket pair (which
// fragment), and the child's backend fills the runner's buffers straight from that memory
// and empties them straight into it (InPlaceBackend). Adding a fragment restarts the child
// with every fragment loaded; removing one tells the child to drop it.
//
// The child is its own process image: `dpushard dpu-child` (the worker's own executable,
// /proc/self/exe, started with posix_spawn; dpu_spawn.hpp), never a fork of the
// multi-threaded worker, so no lock another thread held can hang it while it initialises
// protobuf, glog and XRT. It gets the socket at descriptor 3 and, per fragment, the
// serialized graph and the frame memory as memfds at 4+2k and 5+2k (dpu_child_main.cpp);
// it answers the load with "OK" and each fragment's runner batch, or one error line.
//
// The child gets XLNX_DPU_TIMEOUT set to the frame's time budget: the timing model's
// prediction for the fragment (`kv260` target) times a generous factor, at least
// kMinBudgetMs (the largest over the fragments). When the child dies or a frame exceeds the
// budget (plus a grace for the child's own timeout to fire first), the frame's run() kills
// and restarts the child, with every fragment, and throws one DeviceError naming the graph,
// what happened and the restart; the worker reports it for that frame (DEVICE_FAILED, with
// node, fragment and frame) and goes on serving. Frames of other fragments waiting for the
// DPU run on the new child.
//
// A child that fails to start (it dies, answers an error or does not answer within the load
// timeout while loading fragments that loaded before) backs off: the next attempt waits
// kFirstBackoffMs, doubling with each failure up to kMaxBackoffMs; frames that arrive
// meanwhile fail at once with the reason. Each failure is logged (event=dpu_backoff).
// The child dies with its parent (PR_SET_PDEATHSIG) and leaves with _exit.

#include <sys/types.h>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dpu_binding.hpp"
#include "dpushard/exec/backend.hpp"

namespace dpushard::vart_detail {

// Budget of one frame: the prediction times this factor, and at least kMinBudgetMs.
// DPUSHARD_VART_BUDGET_FACTOR replaces the factor (a DPU far slower than the KV260 model,
// or VART's runtime double, which computes the DPU's work on the CPU).
constexpr double kBudgetFactor = 50.0;
double budget_factor();  // kBudgetFactor, or DPUSHARD_VART_BUDGET_FACTOR when set
constexpr int kMinBudgetMs = 1000;
// Extra time the parent waits beyond XLNX_DPU_TIMEOUT, so VART's own timeout ends the child
// with its message before the parent kills it.
constexpr int kGraceMs = 1000;
// A child loading fragments gets this long (or the budget and grace, if longer).
constexpr int kLoadTimeoutMs = 60'000;
// Back-off after a failed start: kFirstBackoffMs, doubled per consecutive failure, at most
// kMaxBackoffMs.
constexpr int kFirstBackoffMs = 500;
constexpr int kMaxBackoffMs = 30'000;
int backoff_ms(int failures);  // the wait after `failures` consecutive failed starts

// The hidden subcommand the worker's executable runs as the DPU process.
constexpr const char* kDpuChildCommand = "dpu-child";

// The socket pair's messages: a command is one byte and the fragment's id.
constexpr char kRun = 'R';   // run the frame in the fragment's memory; reply "OK" + fix points
constexpr char kDrop = 'U';  // unload the fragment (no reply)
constexpr std::size_t kMaxMessage = 4096;
std::string command(char what, int id);
void send_message(int fd, const std::string& message);
std::string receive_message(int fd);  // one message; "" when the peer closed the socket

// A frame on memory the caller gives (the shared memory): what the child runs frames with,
// implemented by the in-process vart backend (vart_backend.cpp).
class InPlaceBackend {
 public:
  virtual ~InPlaceBackend() = default;
  // One dense buffer per tensor, in graph order, sized to the fragment's shapes. Returns the
  // outputs' fix points (the runner tensors').
  virtual std::vector<int> run_on(const std::vector<const std::int8_t*>& inputs,
                                  const std::vector<std::int8_t*>& outputs) = 0;
  // Frames the runner takes per job (its input tensor's first dimension).
  virtual std::uint32_t runner_batch() const = 0;
};

// Where a frame's tensors lie in the shared memory: inputs then outputs, dense, in graph
// order. Both sides compute it from the graph.
struct FrameLayout {
  std::vector<std::size_t> in_offsets, in_bytes, out_offsets, out_bytes;
  std::size_t total = 0;
};
FrameLayout frame_layout(const DpuBinding& binding);

// One fragment as the DPU process serves it.
struct DpuFragment {
  std::string where;  // "vart: graph 'G'"
  std::size_t outputs = 0;
  int graph_fd = -1;   // the serialized graph (a memfd), which the child reads
  int memory_fd = -1;  // the frame memory (a memfd), mapped by the caller and the child
  int budget_ms = kMinBudgetMs;
  std::uint32_t runner_batch = 0;  // as the child reported it at its last load
};

// The supervised child that runs VART for every fragment of one DPU.
class DpuProcess {
 public:
  // The process's DPU process, created with the first fragment and ended with the last.
  static std::shared_ptr<DpuProcess> shared();
  DpuProcess() = default;
  ~DpuProcess();
  DpuProcess(const DpuProcess&) = delete;
  DpuProcess& operator=(const DpuProcess&) = delete;

  // Loads a fragment (its memory already mapped, shared): restarts the child with every
  // fragment. Throws the child's one-line error when it cannot load it; the others stay.
  int add(DpuFragment fragment);
  void remove(int id);
  // Runs the frame in fragment `id`'s memory; returns its outputs' fix points. Throws a
  // DeviceError (the child restarted) when the frame failed.
  std::vector<int> run(int id);
  std::uint32_t runner_batch(int id);

  int budget_ms() const { return budget_ms_; }  // XLNX_DPU_TIMEOUT given to the child
  // How long a child may take to load its fragments (kLoadTimeoutMs; tests make it short).
  void set_load_timeout_ms(int ms) { load_timeout_ms_ = ms; }
  pid_t child() const { return child_; }
  int restarts() const { return restarts_; }

 private:
  // Spawns the child and waits for its load report; throws on failure.
  void start_child(const std::string& who);
  // start_child for the fragments as they were: a failure counts towards the back-off, and
  // during the back-off it throws at once without starting anything.
  void restart_child(const std::string& who);
  void stop_child();   // closes the socket, waits briefly, then kills
  std::string reap();  // waits for the dead child: "killed by signal 6 (Aborted)", ...
  std::string restart_after(const DpuFragment& fragment, const std::string& what);

  std::map<int, DpuFragment> fragments_;
  int next_id_ = 0;
  int budget_ms_ = kMinBudgetMs;
  int load_timeout_ms_ = kLoadTimeoutMs;
  pid_t child_ = -1;
  int fd_ = -1;
  int restarts_ = 0;
  int failed_starts_ = 0;  // consecutive; 0 after a start that worked
  std::string last_failure_;
  std::chrono::steady_clock::time_point next_start_{};
  std::mutex mutex_;  // one frame (or load) at a time: one DPU core
};

class SupervisedBackend final : public Backend {
 public:
  explicit SupervisedBackend(BackendOptions options);
  ~SupervisedBackend() override;
  SupervisedBackend(const SupervisedBackend&) = delete;
  SupervisedBackend& operator=(const SupervisedBackend&) = delete;

  std::string_view name() const override { return "vart"; }
  void load(const Graph& graph) override;
  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override;
  const FrameMemory* frame_memory() const override { return id_ < 0 ? nullptr : &frame_; }
  std::vector<QTensor> run_in_place() override;
  std::uint32_t runner_batch() const override;

  int budget_ms() const { return process_ ? process_->budget_ms() : kMinBudgetMs; }
  pid_t child() const { return process_ ? process_->child() : -1; }
  int restarts() const { return process_ ? process_->restarts() : 0; }

 private:
  void unload();

  BackendOptions options_;
  std::shared_ptr<DpuProcess> process_;
  int id_ = -1;
  DpuBinding binding_;
  std::string where_ = "vart";
  std::int8_t* shared_ = nullptr;  // inputs then outputs, the memfd's mapping
  std::size_t shared_bytes_ = 0;
  int memory_fd_ = -1;  // the frame memory and the serialized graph, handed to the child
  int graph_fd_ = -1;
  FrameMemory frame_;
  std::mutex mutex_;  // run(): one caller's frame in this fragment's memory at a time
};

}  // namespace dpushard::vart_detail
