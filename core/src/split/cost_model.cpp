// The default cost model: a roofline over the KV260's DPU, its A53 cores and 1 GbE.
#include <algorithm>
#include <cmath>

#include "dpushard/graph/cost.hpp"
#include "dpushard/split/split.hpp"

namespace dpushard {
namespace {

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

std::int64_t last_dim(const std::vector<std::int64_t>& shape) {
  return shape.empty() ? 1 : shape.back();
}

class RooflineCostModel final : public CostModel {
 public:
  explicit RooflineCostModel(const RooflineParams& p) : p_(p) {}

  std::string name() const override { return "roofline"; }

  std::map<std::string, double> parameters() const override {
    return {{"dpu_peak_gmacs", p_.dpu_peak_gmacs},
            {"dpu_efficiency", p_.dpu_efficiency},
            {"dpu_channel_parallel", static_cast<double>(p_.dpu_channel_parallel)},
            {"ddr_gbytes_per_s", p_.ddr_gbytes_per_s},
            {"ddr_efficiency", p_.ddr_efficiency},
            {"cpu_gmacs", p_.cpu_gmacs},
            {"cpu_ns_per_element", p_.cpu_ns_per_element},
            {"fragment_overhead_ms", p_.fragment_overhead_ms},
            {"link_gbps", p_.link_gbps},
            {"link_efficiency", p_.link_efficiency},
            {"link_latency_ms", p_.link_latency_ms}};
  }

  double op_seconds(const Graph& graph, const Op& op, Device device) const override {
    const OpCost cost = op_cost(graph, op);
    const std::int64_t out_elems = op.output.element_count();
    std::int64_t in_elems = 0;
    for (const auto& name : op.producers("input"))
      if (const Op* p = graph.find(name)) in_elems += p->output.element_count();
    if (device == Device::Cpu) {
      const double macs = static_cast<double>(cost.macs) / (p_.cpu_gmacs * 1e9);
      const double elems = static_cast<double>(in_elems + out_elems) * p_.cpu_ns_per_element * 1e-9;
      return macs + elems;
    }
    // The DPU computes channels in groups of 16 on both sides: pad the MAC count.
    double macs = static_cast<double>(cost.macs);
    if (cost.macs > 0 && (op.type == "conv2d" || op.type == "depthwise-conv2d")) {
      const auto& w = op.producers("weights");
      const Op* weights = w.empty() ? nullptr : graph.find(w.front());
      if (weights != nullptr && weights->output.shape.size() == 4) {
        const auto& ws = weights->output.shape;
        const std::int64_t par = std::max(1, p_.dpu_channel_parallel);
        const std::int64_t oc = last_dim(op.output.shape);
        const std::int64_t ic = op.type == "depthwise-conv2d" ? 1 : ws[3];
        const std::int64_t padded_ic = op.type == "depthwise-conv2d" ? 1 : round_up(ic, par);
        macs *= static_cast<double>(round_up(oc, par)) / static_cast<double>(oc) *
                static_cast<double>(padded_ic) / static_cast<double>(ic);
      }
    }
    const double compute = macs / (p_.dpu_peak_gmacs * 1e9 * p_.dpu_efficiency);
    const double bytes = static_cast<double>(cost.weight_bytes + in_elems + out_elems);
    const double memory = bytes / (p_.ddr_gbytes_per_s * 1e9 * p_.ddr_efficiency);
    return std::max(compute, memory);
  }

  double fragment_overhead_seconds() const override { return p_.fragment_overhead_ms * 1e-3; }

  double transfer_seconds(std::int64_t bytes) const override {
    if (bytes <= 0) return 0;
    return p_.link_latency_ms * 1e-3 + link_busy_seconds(bytes);
  }

  double link_busy_seconds(std::int64_t bytes) const override {
    if (bytes <= 0) return 0;
    return static_cast<double>(bytes) / (p_.link_gbps * 1e9 / 8.0 * p_.link_efficiency);
  }

 private:
  RooflineParams p_;
};

}  // namespace

double CostModel::fragment_seconds(const Graph& fragment) const {
  throw Error("cost model '" + name() + "' prices ops, not whole fragments (fragment '" +
              fragment.name() + "')");
}

CostModel::FragmentLoad CostModel::fragment_load(const Graph& fragment) const {
  const double seconds = fragment_seconds(fragment);
  return {seconds, seconds, 0, 0};
}

std::unique_ptr<CostModel> make_roofline_cost_model(const RooflineParams& params) {
  if (!(params.link_gbps > 0)) throw Error("cost model: link speed must be positive");
  if (!(params.dpu_peak_gmacs > 0) || !(params.cpu_gmacs > 0) || !(params.ddr_gbytes_per_s > 0))
    throw Error("cost model: rates must be positive");
  return std::make_unique<RooflineCostModel>(params);
}

}  // namespace dpushard
