// The KV260 timing model (dpushard/perf/perf.hpp) as the planner's cost model: fragments priced
// as a whole by predict(), ops by time_op() for the strategies' unit-level search, and the
// boundary tensors' transfers at the link speed.
#include <algorithm>

#include "dpushard/perf/perf.hpp"
#include "dpushard/split/split.hpp"

namespace dpushard {
namespace {

// The ops predict() prices at the boundary slowdown when a fix-less output drags them to
// the CPU (core/src/perf/boundary.cpp).
bool is_conv_like(const std::string& type) {
  return type == "conv2d" || type == "depthwise-conv2d" || type == "matmul" ||
         type == "inner-product" || type == "transposed-conv2d";
}

class TimingCostModel final : public CostModel {
 public:
  TimingCostModel(Target target, const TimingCostParams& p) : target_(std::move(target)), p_(p) {}

  std::string name() const override { return "timing:" + target_.name; }

  std::map<std::string, double> parameters() const override {
    return {{"clock_mhz", target_.clock_mhz},
            {"pixel_parallelism", static_cast<double>(target_.pixel_parallelism)},
            {"input_channel_parallelism", static_cast<double>(target_.input_channel_parallelism)},
            {"output_channel_parallelism", static_cast<double>(target_.output_channel_parallelism)},
            {"compute_efficiency", target_.compute_efficiency},
            {"ddr_bandwidth_gbps", target_.ddr_bandwidth_gbps},
            {"ddr_efficiency", target_.ddr_efficiency},
            {"per_subgraph_us", target_.per_subgraph_us},
            {"dpu_cores", static_cast<double>(target_.dpu_cores)},
            {"host_per_frame_us", target_.per_frame_us},
            {"tcp_recv_ns_per_byte", target_.tcp_recv_ns_per_byte},
            {"tcp_send_ns_per_byte", target_.tcp_send_ns_per_byte},
            {"cpu_gemm_gflops", target_.cpu_gemm_gflops},
            {"cpu_elementwise_gflops", target_.cpu_elementwise_gflops},
            {"boundary_slowdown", target_.boundary_slowdown},
            {"link_gbps", p_.link_gbps},
            {"link_efficiency", p_.link_efficiency},
            {"link_latency_ms", p_.link_latency_ms}};
  }

  // On the DPU: time_op where the target's limits put it. On the CPU, an op the DPU could
  // run is there only because a fix-less output dragged it off (the naive split), priced
  // as predict() prices it: a conv at its DPU time times the boundary slowdown, anything
  // else at the CPU's float rate.
  double op_seconds(const Graph& graph, const Op& op, Device device) const override {
    const auto t = time_op(graph, op, target_, Device::Dpu);
    if (!t) return 0;
    if (device == Device::Cpu && t->engine == Device::Dpu) {
      if (is_conv_like(op.type)) return t->ms * target_.boundary_slowdown * 1e-3;
      return time_op(graph, op, target_, Device::Cpu)->ms * 1e-3;
    }
    return t->ms * 1e-3;
  }

  double fragment_overhead_seconds() const override { return target_.per_subgraph_us * 1e-6; }

  bool prices_fragments() const override { return true; }

  double fragment_seconds(const Graph& fragment) const override {
    return predict_fragment_ms(fragment, target_) * 1e-3;
  }

  FragmentLoad fragment_load(const Graph& fragment) const override {
    PredictOptions worker;
    worker.io = HostIo::Network;  // as predict_fragment_ms and the sim workers price it
    const Prediction p = predict(fragment, target_, worker);
    return {p.worker_ms * 1e-3, p.dpu_ms * 1e-3, (p.cpu_ms + p.host_ms) * 1e-3, p.net_ms * 1e-3};
  }

  bool fragment_dpu_use(const Graph& fragment, DpuUse& use) const override {
    PredictOptions worker;
    worker.io = HostIo::Network;  // as fragment_load: the fragment as a worker runs it
    use = dpu_use(predict(fragment, target_, worker));
    return true;
  }

  int dpu_cores() const override {
    return static_cast<int>(std::max<std::int64_t>(1, target_.dpu_cores));
  }
  int host_cores() const override {
    return static_cast<int>(std::max<std::int64_t>(1, target_.host_cores));
  }

  double transfer_seconds(std::int64_t bytes) const override {
    if (bytes <= 0) return 0;
    return p_.link_latency_ms * 1e-3 + link_busy_seconds(bytes);
  }

  double link_busy_seconds(std::int64_t bytes) const override {
    if (bytes <= 0) return 0;
    return static_cast<double>(bytes) / (p_.link_gbps * 1e9 / 8.0 * p_.link_efficiency);
  }

 private:
  Target target_;
  TimingCostParams p_;
};

}  // namespace

std::unique_ptr<CostModel> make_timing_cost_model(const Target& target,
                                                  const TimingCostParams& params) {
  if (!(params.link_gbps > 0)) throw Error("cost model: link speed must be positive");
  if (!(params.link_efficiency > 0 && params.link_efficiency <= 1))
    throw Error("cost model: link efficiency must be in (0, 1]");
  if (!(params.link_latency_ms >= 0)) throw Error("cost model: link latency must be >= 0");
  if (!(target.clock_mhz > 0) || !(target.compute_efficiency > 0))
    throw Error("cost model: target '" + target.name + "' has no usable DPU clock or efficiency");
  return std::make_unique<TimingCostModel>(target, params);
}

}  // namespace dpushard
