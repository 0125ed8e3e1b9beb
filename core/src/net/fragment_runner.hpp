#pragma once
// One fragment on a worker: its backend, the frames waiting for inputs or for compute
// (one bounded queue), and its statistics. Driven from the io thread; run() is called
// on a pool thread, one frame at a time.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "dpushard/exec/backend.hpp"
#include "dpushard/net/buffer_pool.hpp"
#include "dpushard/net/protocol.hpp"
#include "prepared_fragments.hpp"

namespace dpushard::net {

class FragmentRunner {
 public:
  FragmentRunner(FragmentAssignment assignment, std::unique_ptr<Backend> backend,
                 std::vector<QTensor> input_specs, std::size_t output_count);

  const FragmentAssignment& assignment() const { return assignment_; }
  const std::string& name() const { return assignment_.name; }
  // The device runner's batch for this fragment (Backend::runner_batch; 0 without a device).
  std::uint32_t runner_batch() const { return backend_->runner_batch(); }

  // Stores input `index` of `frame`. Throws ProtocolError when the index, shape or
  // fix_point is wrong, the input arrived twice, or a new frame would exceed `capacity`.
  void accept(std::uint64_t frame, std::uint32_t index, QTensor&& tensor, std::uint32_t capacity);

  bool can_start() const { return !running_ && !ready_.empty(); }
  struct ReadyFrame {
    std::uint64_t frame = 0;
    std::vector<QTensor> inputs;
    std::chrono::steady_clock::time_point ready;  // when its last input arrived
  };
  // The lowest complete frame and its inputs; marks the fragment busy.
  ReadyFrame take_ready();
  // Runs one frame. A backend with memory of its own for a frame (Backend::frame_memory:
  // vart's, shared with its DPU process) gets the inputs written straight into it and its
  // outputs read straight out of it into buffers from `buffers`; any other, run_ready().
  std::vector<QTensor> run(const std::vector<QTensor>& inputs,
                           std::chrono::steady_clock::time_point ready, BufferPool& buffers);
  void finished(std::uint64_t busy_ns, std::uint64_t cpu_ns);
  // Drops every waiting frame, returning their buffers.
  std::vector<QTensor> drain();
  void forget(std::uint64_t frame);

  FragmentStats stats() const;
  // Whether a frame is computing on the pool (the backend is in use).
  bool running() const { return running_; }
  // The loaded backend and what it was loaded with, for a later job (prepared_fragments.hpp);
  // the runner is unusable afterwards. Only when !running().
  PreparedFragment release(int threads);

 private:
  struct Waiting {
    std::vector<std::optional<QTensor>> inputs;
    std::size_t received = 0;
  };

  FragmentAssignment assignment_;
  std::unique_ptr<Backend> backend_;
  std::vector<QTensor> specs_;
  std::size_t output_count_ = 0;
  std::map<std::uint64_t, Waiting> waiting_;
  std::map<std::uint64_t, ReadyFrame> ready_;
  bool running_ = false;
  std::uint64_t frames_ = 0;
  std::uint64_t busy_ns_ = 0;
  std::uint64_t cpu_ns_ = 0;
  std::uint32_t max_queue_ = 0;
};

}  // namespace dpushard::net
