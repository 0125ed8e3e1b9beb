#pragma once
// `serve --cluster`: requests run on the plan's workers. One long-lived orchestrator stream
// (RunOptions::frame_feed) takes each request as a frame when it arrives, keeps up to
// max_in_flight() of them in flight and hands each frame's outputs back to the infer() call
// waiting for it. Under --on-node-loss replan a lost worker is planned around and the frames
// in flight are re-sent; a frame that cannot be served fails its request with the coded error.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dpushard/cluster/cluster.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/serve/inference_executor.hpp"

namespace dpushard::cli {

class ClusterExecutor final : public InferenceExecutor {
 public:
  // Starts connecting, uploading and loading at once (on a thread of its own); ready() turns
  // true once every node has loaded the job. `options.inflight` frames are kept in flight.
  // `timing_only`: a frame whose outputs a timing-only node (sim) did not compute is
  // answered with them (zeros, QTensor::computed false) instead of failing: for benchmarks
  // of serve on modeled boards (serve --timing-only).
  ClusterExecutor(const Plan& plan, const std::string& plan_dir,
                  const cluster::ClusterConfig& cluster, cluster::RunOptions options,
                  bool timing_only = false);
  ~ClusterExecutor() override;  // close()
  // Closes the stream: the frames in flight complete, the workers unload the job; new
  // requests fail. Returns once the orchestrator has finished. Idempotent.
  void close();
  ClusterExecutor(const ClusterExecutor&) = delete;
  ClusterExecutor& operator=(const ClusterExecutor&) = delete;

  const ServedModel& model() const override { return model_; }
  bool ready() const override { return ready_.load(); }
  int max_in_flight() const override { return options_.inflight; }
  std::vector<QTensor> infer(const std::vector<QTensor>& inputs) override;
  std::vector<NodeStats> node_stats() const override;

  // Waits until the stream runs (true) or the run ended before it could (false; why()).
  bool wait_until_streaming();
  std::string why() const;

 private:
  struct Request {
    std::vector<QTensor> inputs;
    std::promise<std::vector<QTensor>> outputs;
  };
  void run();  // the orchestrator's thread
  cluster::RunOptions::Feed feed() const;
  std::vector<QTensor> take(std::uint64_t frame);
  void complete(std::uint64_t frame, std::vector<QTensor> outputs);
  void fail(std::uint64_t frame, const std::string& error);
  void end(const std::string& why);  // the run is over: every request left fails with `why`
  // A node's counters for the job that runs: added to what its earlier jobs did.
  void count(const std::string& node, const cluster::NodeCounters& counters);

  const Plan plan_;
  const std::string plan_dir_;
  const cluster::ClusterConfig cluster_;
  cluster::RunOptions options_;
  const bool timing_only_;
  ServedModel model_;
  std::atomic<bool> ready_{false};
  std::atomic<int> stop_{0};  // set when closed before the stream ran: connecting stops
  mutable std::mutex mutex_;
  std::condition_variable started_;
  bool started_or_ended_ = false;
  bool closed_ = false;
  std::string ended_;                                            // why the run ended, once it has
  std::function<void()> wake_;                                   // while the stream runs
  std::deque<std::shared_ptr<Request>> waiting_;                 // not yet sent
  std::map<std::uint64_t, std::shared_ptr<Request>> in_flight_;  // by frame index
  // Per node (the cluster's first plan.nodes): the figures of the jobs before the one that
  // runs, and that job's last counters.
  struct Counted {
    NodeStats before;
    cluster::NodeCounters job;
  };
  std::map<std::string, Counted> counted_;
  std::vector<std::string> nodes_;  // in cluster order
  std::thread thread_;              // last: started once everything it uses exists
};

}  // namespace dpushard::cli
