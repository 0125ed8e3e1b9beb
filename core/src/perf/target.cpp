// Targets as data: a YAML document per target, every field required and type-checked so a
// typo is a one-line error naming the field instead of a silently wrong prediction.

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "builtin_targets.hpp"
#include "dpushard/error.hpp"
#include "dpushard/perf.hpp"

namespace dpushard {
namespace {

class TargetReader {
 public:
  TargetReader(const YAML::Node& root, std::string origin)
      : root_(root), origin_(std::move(origin)) {}

  YAML::Node node(const std::string& path) const {
    YAML::Node cur = root_;
    std::string done;
    std::istringstream parts(path);
    for (std::string part; std::getline(parts, part, '.');) {
      done += (done.empty() ? "" : ".") + part;
      if (!cur.IsMap()) fail(path, "is missing ('" + done + "' is not a mapping)");
      YAML::Node next = cur[part];
      if (!next.IsDefined() || next.IsNull()) fail(path, "is missing");
      cur.reset(next);
    }
    return cur;
  }

  double number(const std::string& path, double min, double max) const {
    const YAML::Node n = node(path);
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !is_numeric_text(n.Scalar()))
      fail(path, "must be a number", n);
    if (!(v >= min && v <= max))
      fail(path, "is " + n.Scalar() + ", outside [" + text(min) + ", " + text(max) + "]", n);
    return v;
  }

  std::int64_t integer(const std::string& path, std::int64_t min, std::int64_t max) const {
    const YAML::Node n = node(path);
    long long v = 0;
    if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v))
      fail(path, "must be an integer", n);
    if (v < min || v > max)
      fail(path,
           "is " + n.Scalar() + ", outside [" + std::to_string(min) + ", " + std::to_string(max) +
               "]",
           n);
    return v;
  }

  bool boolean(const std::string& path) const {
    const YAML::Node n = node(path);
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) fail(path, "must be true or false", n);
    return v;
  }

  std::string string(const std::string& path) const {
    const YAML::Node n = node(path);
    if (!n.IsScalar() || n.Scalar().empty()) fail(path, "must be a non-empty string", n);
    return n.Scalar();
  }

  // [min, max] pair of integers.
  std::pair<std::int64_t, std::int64_t> range(const std::string& path, std::int64_t lo,
                                              std::int64_t hi) const {
    const YAML::Node n = node(path);
    if (!n.IsSequence() || n.size() != 2) fail(path, "must be a [min, max] pair", n);
    long long a = 0, b = 0;
    if (!YAML::convert<long long>::decode(n[0], a) || !YAML::convert<long long>::decode(n[1], b))
      fail(path, "must hold two integers", n);
    if (a < lo || b > hi || a > b)
      fail(path, "must satisfy " + std::to_string(lo) + " <= min <= max <= " + std::to_string(hi),
           n);
    return {a, b};
  }

  std::vector<std::string> strings(const std::string& path) const {
    const YAML::Node n = node(path);
    if (!n.IsSequence()) fail(path, "must be a list of strings", n);
    std::vector<std::string> out;
    for (const auto& item : n) {
      if (!item.IsScalar()) fail(path, "must be a list of strings", item);
      out.push_back(item.Scalar());
    }
    return out;
  }

  [[noreturn]] void fail(const std::string& path, const std::string& what,
                         const YAML::Node& at = YAML::Node()) const {
    std::string where;
    if (at.IsDefined() && at.Mark().line >= 0)
      where = " (line " + std::to_string(at.Mark().line + 1) + ")";
    throw Error(origin_ + ": field '" + path + "' " + what + where);
  }

 private:
  static bool is_numeric_text(const std::string& s) {
    // yaml-cpp decodes "true" as 1 for some types; insist on digits.
    return !s.empty() && s.find_first_of("0123456789") != std::string::npos &&
           s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  }
  static std::string text(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
  }

  YAML::Node root_;
  std::string origin_;
};

constexpr double kBig = 1e12;

}  // namespace

Target parse_target(std::string_view yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw Error(origin + ": not valid YAML (line " + std::to_string(e.mark.line + 1) +
                "): " + e.msg);
  }
  if (!root.IsMap()) throw Error(origin + ": a target must be a YAML mapping");
  const TargetReader r(root, origin);

  Target t;
  t.name = r.string("name");
  t.arch = r.string("dpu.arch");
  t.clock_mhz = r.number("dpu.clock_mhz", 1, 10'000);
  t.dpu_cores = r.integer("dpu.cores", 1, 64);
  t.pixel_parallelism = r.integer("dpu.pixel_parallelism", 1, 1024);
  t.input_channel_parallelism = r.integer("dpu.input_channel_parallelism", 1, 1024);
  t.output_channel_parallelism = r.integer("dpu.output_channel_parallelism", 1, 1024);
  t.alu_pixel_parallelism = r.integer("dpu.alu_pixel_parallelism", 1, 1024);
  t.channel_augmentation = r.boolean("dpu.channel_augmentation");
  t.compute_efficiency = r.number("dpu.compute_efficiency", 1e-6, 1);

  t.ddr_bandwidth_gbps = r.number("memory.ddr_bandwidth_gbps", 1e-6, kBig);
  t.ddr_efficiency = r.number("memory.efficiency", 1e-6, 1);
  t.model_memory_bytes = r.integer("memory.model_mib", 1, std::int64_t{1} << 30) << 20;

  t.per_subgraph_us = r.number("overheads.per_subgraph_us", 0, kBig);

  t.host_cores = r.integer("host.cores", 1, 1024);
  t.per_frame_us = r.number("host.per_frame_us", 0, kBig);
  t.copy_in_ns_per_byte = r.number("host.copy_in_ns_per_byte", 0, kBig);
  t.copy_out_ns_per_byte = r.number("host.copy_out_ns_per_byte", 0, kBig);
  t.requantize_ns_per_element = r.number("host.requantize_ns_per_element", 0, kBig);
  t.tcp_recv_ns_per_byte = r.number("host.tcp_recv_ns_per_byte", 0, kBig);
  t.tcp_send_ns_per_byte = r.number("host.tcp_send_ns_per_byte", 0, kBig);

  t.cpu_name = r.string("cpu.name");
  t.cpu_gemm_gflops = r.number("cpu.fallback_gflops.gemm", 1e-6, kBig);
  t.cpu_depthwise_gflops = r.number("cpu.fallback_gflops.depthwise", 1e-6, kBig);
  t.cpu_elementwise_gflops = r.number("cpu.fallback_gflops.elementwise", 1e-6, kBig);
  t.cpu_transcendental_gflops = r.number("cpu.fallback_gflops.transcendental", 1e-6, kBig);
  t.cpu_normalization_gflops = r.number("cpu.fallback_gflops.normalization", 1e-6, kBig);
  t.boundary_slowdown = r.number("cpu.boundary_slowdown", 1, kBig);

  std::tie(t.kernel_min, t.kernel_max) = r.range("limits.kernel", 1, 1 << 20);
  std::tie(t.stride_min, t.stride_max) = r.range("limits.stride", 1, 1 << 20);
  t.max_kernel_icgroups = r.integer("limits.max_kernel_icgroups", 1, std::int64_t{1} << 40);
  t.max_output_channels = r.integer("limits.max_output_channels", 1, std::int64_t{1} << 40);
  t.leaky_alpha = r.number("limits.leaky_alpha", 0, 1);
  t.cpu_ops = r.strings("limits.cpu_ops");
  return t;
}

Target load_target(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": cannot open target file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_target(text.str(), path.string());
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

std::string_view engine_name(Engine e) { return e == Engine::Dpu ? "DPU" : "CPU"; }

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
