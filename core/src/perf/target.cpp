// Targets as data: a YAML document per target, every field required and type-checked so a
// typo is a one-line error naming the field instead of a silently wrong prediction.

#include <filesystem>
#include <string>

#include "builtin_targets.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/perf/dpu_rules.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/yaml/yaml_reader.hpp"

namespace dpushard {
namespace {

constexpr double kBig = 1e12;

// The timing model's placement limits, from the DPU's op rules (dpushard/perf/dpu_rules.hpp): the
// conv's kernel, stride, kernel-channel budget and output channels apply to every conv and
// pool, the leaky-relu's slope, and the op types the rules put on the CPU.
void set_limits(Target& t, const DpuRules& rules) {
  const auto rule = [&](const char* type) -> const DpuOpRule& {
    auto it = rules.ops.find(type);
    if (it == rules.ops.end()) throw Error("DPU rules: no rule for " + std::string(type));
    return it->second;
  };
  const DpuOpRule& conv = rule("conv2d");
  if (!conv.kernel || !conv.stride || !conv.kernel_channel_budget || !conv.out_channels)
    throw Error(
        "DPU rules: conv2d needs kernel, stride, kernel_channel_budget and out_channels limits");
  std::tie(t.kernel_min, t.kernel_max) = *conv.kernel;
  std::tie(t.stride_min, t.stride_max) = *conv.stride;
  t.max_kernel_icgroups = *conv.kernel_channel_budget;
  t.max_output_channels = conv.out_channels->second;
  const DpuOpRule& leaky = rule("leaky-relu");
  if (leaky.alphas.size() != 1) throw Error("DPU rules: leaky-relu needs one alpha");
  t.leaky_alpha = leaky.alphas.front();
  t.cpu_ops.clear();
  for (const auto& [type, r] : rules.ops)
    if (r.device == Device::Cpu) t.cpu_ops.push_back(type);
}

Target read_target(const yaml::Document& doc) {
  const yaml::Value root = doc.root();
  if (root.is_map() && root.open_map().has("limits"))
    root.open_map().get("limits").fail(
        "a target no longer lists DPU limits: they come from the DPU's op rules "
        "(targets/dpu/dpuczdx8g.yaml; docs/perf.md)");
  const yaml::Map top = root.map({"name", "dpu", "memory", "overheads", "host", "cpu"});
  Target t;
  t.name = top.get("name").nonempty_text();

  const yaml::Map dpu = top.get("dpu").map(
      {"arch", "clock_mhz", "cores", "pixel_parallelism", "input_channel_parallelism",
       "output_channel_parallelism", "alu_pixel_parallelism", "channel_augmentation",
       "compute_efficiency", "min_op_cycles", "alu_min_op_cycles"});
  t.arch = dpu.get("arch").nonempty_text();
  t.clock_mhz = dpu.get("clock_mhz").number(1, 10'000);
  t.dpu_cores = dpu.get("cores").int32(1, 64);
  t.pixel_parallelism = dpu.get("pixel_parallelism").int32(1, 1024);
  t.input_channel_parallelism = dpu.get("input_channel_parallelism").int32(1, 1024);
  t.output_channel_parallelism = dpu.get("output_channel_parallelism").int32(1, 1024);
  t.alu_pixel_parallelism = dpu.get("alu_pixel_parallelism").int32(1, 1024);
  t.channel_augmentation = dpu.get("channel_augmentation").boolean();
  t.compute_efficiency = dpu.get("compute_efficiency").number(1e-6, 1);
  t.min_op_cycles = dpu.get("min_op_cycles").number(0, kBig);
  t.alu_min_op_cycles = dpu.get("alu_min_op_cycles").number(0, kBig);

  const yaml::Map memory = top.get("memory").map({"ddr_bandwidth_gbps", "efficiency", "model_mib"});
  t.ddr_bandwidth_gbps = memory.get("ddr_bandwidth_gbps").number(1e-6, kBig);
  t.ddr_efficiency = memory.get("efficiency").number(1e-6, 1);
  t.model_memory_bytes = memory.get("model_mib").integer(1, std::int64_t{1} << 30) << 20;

  const yaml::Map overheads = top.get("overheads").map({"per_subgraph_us"});
  t.per_subgraph_us = overheads.get("per_subgraph_us").number(0, kBig);

  const yaml::Map host = top.get("host").map({"cores", "per_frame_us", "copy_in_ns_per_byte",
                                              "copy_out_ns_per_byte", "requantize_ns_per_element",
                                              "tcp_recv_ns_per_byte", "tcp_send_ns_per_byte"});
  t.host_cores = host.get("cores").int32(1, 1024);
  t.per_frame_us = host.get("per_frame_us").number(0, kBig);
  t.copy_in_ns_per_byte = host.get("copy_in_ns_per_byte").number(0, kBig);
  t.copy_out_ns_per_byte = host.get("copy_out_ns_per_byte").number(0, kBig);
  t.requantize_ns_per_element = host.get("requantize_ns_per_element").number(0, kBig);
  t.tcp_recv_ns_per_byte = host.get("tcp_recv_ns_per_byte").number(0, kBig);
  t.tcp_send_ns_per_byte = host.get("tcp_send_ns_per_byte").number(0, kBig);

  const yaml::Map cpu = top.get("cpu").map({"name", "fallback_gflops", "boundary_slowdown"});
  t.cpu_name = cpu.get("name").nonempty_text();
  const yaml::Map gflops =
      cpu.get("fallback_gflops")
          .map({"gemm", "depthwise", "elementwise", "transcendental", "normalization"});
  t.cpu_gemm_gflops = gflops.get("gemm").number(1e-6, kBig);
  t.cpu_depthwise_gflops = gflops.get("depthwise").number(1e-6, kBig);
  t.cpu_elementwise_gflops = gflops.get("elementwise").number(1e-6, kBig);
  t.cpu_transcendental_gflops = gflops.get("transcendental").number(1e-6, kBig);
  t.cpu_normalization_gflops = gflops.get("normalization").number(1e-6, kBig);
  t.boundary_slowdown = cpu.get("boundary_slowdown").number(1, kBig);

  set_limits(t, builtin_dpu_rules());
  return t;
}

}  // namespace

Target parse_target(std::string_view yaml_text, const std::string& origin) {
  return read_target(yaml::Document::parse(std::string(yaml_text), origin));
}

Target load_target(const std::filesystem::path& path) {
  return read_target(yaml::Document::load(path, "target file " + path.string()));
}

std::vector<std::string> builtin_target_names() {
  std::vector<std::string> names;
  for (const auto& t : perf::builtin_targets()) names.emplace_back(t.name);
  return names;
}

std::string_view builtin_target_yaml(std::string_view name) {
  std::string known;
  for (const auto& t : perf::builtin_targets()) {
    if (t.name == name) return t.yaml;
    known += (known.empty() ? "" : ", ") + std::string(t.name);
  }
  throw Error("unknown target '" + std::string(name) + "' (built in: " + known +
              "; or pass a target YAML file)");
}

Target builtin_target(std::string_view name) {
  return parse_target(builtin_target_yaml(name), "built-in target '" + std::string(name) + "'");
}

Target resolve_target(std::string_view name_or_file) {
  const std::filesystem::path path(name_or_file);
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return load_target(path);
  for (const auto& t : perf::builtin_targets())
    if (t.name == name_or_file) return builtin_target(name_or_file);
  if (name_or_file.find('/') != std::string_view::npos || name_or_file.ends_with(".yaml"))
    throw Error(std::string(name_or_file) + ": cannot open target file");
  return builtin_target(name_or_file);  // throws listing the built-in names
}

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::Compute:
      return "compute";
    case Bound::Memory:
      return "memory";
    case Bound::Cpu:
      break;
  }
  return "cpu";
}

}  // namespace dpushard
