// The `sim` backend: frames take the timing model's time (see dpushard/exec/sim_backend.hpp for
// how concurrent frames share the modeled DPU cores, A53 cores and network thread).

#include "dpushard/exec/sim_backend.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dpushard/base/error.hpp"

namespace dpushard {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration from_ms(double ms) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

}  // namespace

namespace sim_detail {

// `count` identical servers (DPU cores, A53 cores): a job takes the one that frees first.
class Servers {
 public:
  explicit Servers(std::size_t count) : free_at_(std::max<std::size_t>(1, count)) {}

  // Reserves `duration` starting no earlier than `ready`; returns when the job ends.
  Clock::time_point reserve(Clock::time_point ready, Clock::duration duration) {
    auto first = std::min_element(free_at_.begin(), free_at_.end());
    *first = std::max(ready, *first) + duration;
    return *first;
  }

 private:
  std::vector<Clock::time_point> free_at_;
};

}  // namespace sim_detail

struct SimBoard final : BackendShared {
  explicit SimBoard(const Target& target)
      : dpu_cores(static_cast<std::size_t>(target.dpu_cores)),
        a53_cores(static_cast<std::size_t>(target.host_cores)),
        net_thread(1) {}

  // Reserves one frame's work and returns when it ends: a free DPU core from its arrival,
  // then an A53 core for its CPU ops and host work; the network thread moves its tensors
  // meanwhile (docs/perf.md "The sim backend").
  Clock::time_point reserve(Clock::time_point arrival, Clock::duration dpu, Clock::duration a53,
                            Clock::duration net) {
    const std::lock_guard lock(mutex);
    const Clock::time_point dpu_done = dpu_cores.reserve(arrival, dpu);
    const Clock::time_point a53_done = a53_cores.reserve(dpu_done, a53);
    return std::max(a53_done, net_thread.reserve(arrival, net));
  }

  std::mutex mutex;
  sim_detail::Servers dpu_cores;
  sim_detail::Servers a53_cores;
  sim_detail::Servers net_thread;
};

namespace {

// The backend that computes sim's outputs when asked for them, asked of the registry by
// traits: the last registered backend built here that computes `_int` graphs' outputs on the
// host CPU.
// The registry starts with ref and register_builtin_backends() adds cpu after it where
// oneDNN is built, so that is `cpu` (the fastest bit-identical to ref), else `ref`.
std::string numerics_backend() {
  std::string chosen;
  for (const auto& d : backend_descriptors())
    if (d->make && d->traits.device == DeviceKind::HostCpu &&
        d->traits.compiled == CompiledModels::Lowered && d->traits.computes_outputs)
      chosen = d->name;
  if (chosen.empty()) throw Error("sim: no backend here computes numerics on the host CPU");
  return chosen;
}

// Shape-only outputs in graph.outputs() order, as the ref backend names them.
std::vector<QTensor> output_placeholders(const Graph& graph) {
  std::vector<QTensor> outputs;
  for (const Op* op : graph.outputs()) {
    QTensor t;
    t.name = op->name;
    t.shape = op->output.shape;
    t.fix_point = fix_point_of(graph, op->name).value_or(0);
    t.data.assign(static_cast<std::size_t>(op->output.element_count()), 0);
    t.computed = false;
    outputs.push_back(std::move(t));
  }
  return outputs;
}

// The sim backend's own options (BackendOptions::settings), read from its descriptor's keys.
struct SimSettings {
  bool numerics = false;
  bool fail_frames = false;
  std::string target;
};

SimSettings read_settings(const BackendOptions& options) {
  const auto settings = backend_settings("sim", options);
  return {setting_flag(settings, "numerics", "sim"), setting_flag(settings, "fail-frames", "sim"),
          settings.at("target")};
}

class SimBackend final : public Backend {
 public:
  explicit SimBackend(BackendOptions options)
      : options_(std::move(options)), settings_(read_settings(options_)) {}

  std::string_view name() const override { return "sim"; }

  void load(const Graph& graph) override {
    target_ = resolve_target(settings_.target);
    PredictOptions worker;
    worker.io = HostIo::Network;  // a worker's tensors arrive and leave over TCP
    prediction_ = predict(graph, target_, worker);
    input_specs_ = input_specs(graph);
    placeholders_ = output_placeholders(graph);
    dpu_time_ = from_ms(prediction_.dpu_ms);
    a53_time_ = from_ms(prediction_.cpu_ms + prediction_.host_ms);
    net_time_ = from_ms(prediction_.net_ms);
    board_ = std::dynamic_pointer_cast<SimBoard>(options_.shared);
    if (!board_) board_ = std::make_shared<SimBoard>(target_);
    numerics_.reset();
    if (settings_.numerics) {
      BackendOptions inner;
      inner.threads = options_.threads;
      numerics_ = make_backend(numerics_backend(), inner);
      numerics_->load(graph);
    }
    loaded_ = true;
  }

  std::vector<QTensor> run(const std::vector<QTensor>& inputs) override {
    return run_ready(inputs, Clock::now());
  }

  std::vector<QTensor> run_ready(const std::vector<QTensor>& inputs,
                                 Clock::time_point ready) override {
    if (!loaded_) throw Error("sim: run() before load()");
    check_inputs(inputs);
    if (settings_.fail_frames)
      throw DeviceError("sim: the device failed the frame (--sim-fail-frames, a test option)");
    // A frame that waited while this machine was busy starts when its inputs were ready,
    // but not before the frame this caller ran last had ended: a worker runs a fragment's
    // frames one after the other, and a frame queued behind another must not borrow a
    // second modeled A53 core the real worker would not use. Concurrent callers (calls
    // still in progress) are not held back by each other.
    Clock::time_point arrival = std::min(ready, Clock::now());
    {
      const std::lock_guard lock(completed_mutex_);
      arrival = std::max(arrival, last_completed_);
    }

    const Clock::time_point deadline = board_->reserve(arrival, dpu_time_, a53_time_, net_time_);

    const bool inputs_computed =
        std::all_of(inputs.begin(), inputs.end(), [](const QTensor& t) { return t.computed; });
    std::vector<QTensor> outputs;
    if (numerics_ && inputs_computed) {
      const std::lock_guard lock(numerics_mutex_);
      outputs = numerics_->run(inputs);
    } else {
      outputs = placeholders_;  // garbage in would be garbage out: claim nothing
    }
    std::this_thread::sleep_until(deadline);
    {
      const std::lock_guard lock(completed_mutex_);
      last_completed_ = std::max(last_completed_, deadline);
    }
    return outputs;
  }

  const Prediction& prediction() const {
    if (!loaded_) throw Error("sim: no graph loaded");
    return prediction_;
  }

 private:
  void check_inputs(const std::vector<QTensor>& inputs) const {
    check_input_count("sim", inputs.size(), input_specs_.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const QTensor& spec = input_specs_[i];
      check_input("sim", spec.name, spec.shape, spec.fix_point, inputs[i]);
    }
  }

  BackendOptions options_;
  SimSettings settings_;
  Target target_;
  Prediction prediction_;
  std::vector<QTensor> input_specs_;
  std::vector<QTensor> placeholders_;
  Clock::duration dpu_time_{};
  Clock::duration a53_time_{};
  Clock::duration net_time_{};
  std::unique_ptr<Backend> numerics_;
  bool loaded_ = false;

  std::shared_ptr<SimBoard> board_;
  std::mutex numerics_mutex_;
  std::mutex completed_mutex_;
  Clock::time_point last_completed_{};  // the latest deadline of a call that has returned
};

}  // namespace

std::shared_ptr<BackendShared> make_sim_board(const Target& target) {
  return std::make_shared<SimBoard>(target);
}

std::unique_ptr<Backend> make_sim_backend(const BackendOptions& options) {
  return std::make_unique<SimBackend>(options);
}

void register_sim_backend() {
  BackendDescriptor d;
  d.name = "sim";
  d.summary = "the KV260 timing model: each frame takes the modeled DPU and host time";
  // Outputs only with its "numerics" option: by default frames are timed, not computed.
  d.traits = {CompiledModels::Accepted, DeviceKind::ModeledDpu, true, true, false};
  d.options = {
      {"numerics", "--sim-numerics",
       "sim: also compute the real outputs (else they are marked not computed)", "false", true,
       false},
      {"target", "--target,--sim-target",
       "sim: timing model, a built-in target name or a target YAML file", "kv260", false, false},
      // A fault injection for the cluster tests, not for users.
      {"fail-frames", "--sim-fail-frames", "sim, tests only: every frame fails with a device error",
       "false", true, true},
  };
  d.make = &make_sim_backend;
  // One modeled board per process: every fragment of every job a worker runs queues for its
  // DPU. Frames run one per compute thread, so a board of several DPU cores (a ZCU102's 3)
  // needs as many to run its fragments at once. A bad target fails here, not per job.
  d.prepare = [](const BackendOptions& options) {
    const Target target = resolve_target(read_settings(options).target);
    BackendSetup setup;
    setup.shared = make_sim_board(target);
    setup.threads = static_cast<int>(std::max<std::int64_t>(1, target.dpu_cores));
    return setup;
  };
  register_backend(std::move(d));
}

const Prediction& sim_prediction(const Backend& backend) {
  const auto* sim = dynamic_cast<const SimBackend*>(&backend);
  if (sim == nullptr) throw Error("backend '" + std::string(backend.name()) + "' is not sim");
  return sim->prediction();
}

}  // namespace dpushard
