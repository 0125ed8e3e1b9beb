#pragma once
// The vart backend as a worker runs it: VART in a supervised child process, so that a DPU
// that hangs or a VART check that aborts (glog FATAL: VART and XIR end the process rather
// than throw, docs/vart.md) costs one frame, not the worker.
//
// load() forks a child that loads the fragment into the in-process backend and serves
// frames: the parent writes the inputs into memory shared with the child, sends one byte over
// a socket pair, and reads the outputs back from the shared memory. The child gets
// XLNX_DPU_TIMEOUT set to the frame's time budget: the timing model's prediction for the
// fragment (`kv260` target) times a generous factor, at least kMinBudgetMs. When the child
// dies or a frame exceeds the budget (plus a grace for the child's own timeout to fire
// first), run() kills and restarts the child and throws one dpushard::Error naming the graph,
// what happened and the restart; the worker reports it for that frame (DEVICE_FAILED, with
// node, fragment and frame) and goes on serving. Frames go through the child one at a time:
// the KV260 has one DPU core.
//
// The child is forked without exec, from a multi-threaded process: it only runs the backend
// (XIR, VART, its own allocations) and leaves with _exit, never touching the worker's other
// state. It dies with its parent (PR_SET_PDEATHSIG).

#include <sys/types.h>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dpu_binding.hpp"
#include "dpushard/backend.hpp"

namespace dpushard::vart_detail {

using BackendFactory = std::unique_ptr<Backend> (*)(const BackendOptions&);

// Budget of one frame: the prediction times this factor, and at least kMinBudgetMs.
constexpr double kBudgetFactor = 50.0;
constexpr int kMinBudgetMs = 1000;
// Extra time the parent waits beyond XLNX_DPU_TIMEOUT, so VART's own timeout ends the child
// with its message before the parent kills it.
constexpr int kGraceMs = 1000;

class SupervisedBackend final : public Backend {
 public:
  // `in_process` makes the backend the child runs (the vart backend itself).
  SupervisedBackend(BackendOptions options, BackendFactory in_process);
  ~SupervisedBackend() override;
  SupervisedBackend(const SupervisedBackend&) = delete;
  SupervisedBackend& operator=(const SupervisedBackend&) = delete;

  std::string_view name() const override { return "vart"; }
  void load(const Graph& graph) override;
  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override;

  int budget_ms() const { return budget_ms_; }  // XLNX_DPU_TIMEOUT given to the child
  pid_t child() const { return child_; }
  int restarts() const { return restarts_; }

 private:
  void start_child();  // forks and waits for the child's load report; throws on failure
  void stop_child();   // closes the socket, waits briefly, then kills
  std::string reap();  // waits for the dead child: "killed by signal 6 (Aborted)", ...
  [[noreturn]] void serve(int fd);  // the child's loop
  std::string restart_after(const std::string& what);

  BackendOptions options_;
  BackendFactory in_process_;
  Graph graph_;
  DpuBinding binding_;
  std::string where_ = "vart";
  std::int64_t frames_ = 1;
  std::vector<std::size_t> in_offsets_, in_bytes_, out_offsets_, out_bytes_;
  std::int8_t* shared_ = nullptr;  // inputs then outputs, mapped before the fork
  std::size_t shared_bytes_ = 0;
  int budget_ms_ = kMinBudgetMs;
  pid_t child_ = -1;
  int fd_ = -1;
  int restarts_ = 0;
  std::mutex mutex_;
};

}  // namespace dpushard::vart_detail
