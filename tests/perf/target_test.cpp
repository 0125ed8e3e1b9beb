// Targets are data: the shipped KV260 file, and bad files rejected with one line naming the
// field.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/perf/dpu_rules.hpp"
#include "dpushard/perf/perf.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

std::string shipped_text() {
  return testing::read_bytes(DPUSHARD_SOURCE_DIR "/targets/kv260_b4096.yaml");
}

// The error message parse_target gives for `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_target(text, "bad.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string replaced(const std::string& pattern, const std::string& with) {
  const std::string text = shipped_text();
  std::string out = std::regex_replace(text, std::regex(pattern), with);
  EXPECT_NE(out, text) << "pattern " << pattern << " not in the shipped file";
  return out;
}

TEST(Target, ShippedKv260IsB4096At300MHz) {
  const Target t = load_target(DPUSHARD_SOURCE_DIR "/targets/kv260_b4096.yaml");
  EXPECT_EQ(t.name, "kv260");
  EXPECT_DOUBLE_EQ(t.clock_mhz, 300);
  EXPECT_EQ(t.pixel_parallelism, 8);
  EXPECT_EQ(t.input_channel_parallelism, 16);
  EXPECT_EQ(t.output_channel_parallelism, 16);
  EXPECT_EQ(2 * t.peak_macs_per_cycle(), 4096);  // B4096
  EXPECT_DOUBLE_EQ(t.ddr_bandwidth_gbps, 19.2);
  EXPECT_EQ(t.model_memory_bytes, std::int64_t{900} << 20);  // the Kria kits' cma=900M
  EXPECT_EQ(t.kernel_min, 1);
  EXPECT_EQ(t.kernel_max, 16);
  EXPECT_EQ(t.stride_max, 8);
  EXPECT_EQ(t.max_kernel_icgroups, 2048);
  EXPECT_EQ(t.max_output_channels, 4096);
  EXPECT_DOUBLE_EQ(t.leaky_alpha, 0.1);
  EXPECT_GT(t.compute_efficiency, 0.0);
  EXPECT_LE(t.compute_efficiency, 1.0);
}

// The ZCU boards' Model Zoo configurations (Vitis AI 2.5 Model Zoo README): three B4096
// cores at 281 MHz on the ZCU102, two at 300 MHz on the ZCU104; the built-in copies are
// the files in targets/.
TEST(Target, ZcuTargetsAreBuiltIn) {
  const Target zcu102 = resolve_target("zcu102");
  EXPECT_EQ(zcu102.dpu_cores, 3);
  EXPECT_DOUBLE_EQ(zcu102.clock_mhz, 281);
  const Target zcu104 = resolve_target("zcu104");
  EXPECT_EQ(zcu104.dpu_cores, 2);
  EXPECT_DOUBLE_EQ(zcu104.clock_mhz, 300);
  EXPECT_EQ(resolve_target("kv260").dpu_cores, 1);
  for (const auto& [name, file] :
       {std::pair{"zcu102", "zcu102_b4096x3.yaml"}, std::pair{"zcu104", "zcu104_b4096x2.yaml"}}) {
    const Target built_in = builtin_target(name);
    const Target shipped = load_target(std::string(DPUSHARD_SOURCE_DIR "/targets/") + file);
    EXPECT_EQ(built_in.name, shipped.name);
    EXPECT_EQ(built_in.arch, "DPUCZDX8G_ISA1_B4096");
    EXPECT_EQ(2 * built_in.peak_macs_per_cycle(), 4096);
    EXPECT_EQ(built_in.host_cores, shipped.host_cores);
    EXPECT_DOUBLE_EQ(built_in.cpu_gemm_gflops, shipped.cpu_gemm_gflops);
    EXPECT_DOUBLE_EQ(built_in.per_frame_us, shipped.per_frame_us);
  }
}

TEST(Target, ResolvesNamesAndFiles) {
  EXPECT_EQ(resolve_target("kv260").name, "kv260");
  EXPECT_EQ(resolve_target(DPUSHARD_SOURCE_DIR "/targets/kv260_b4096.yaml").name, "kv260");
  EXPECT_EQ(builtin_target_names(), (std::vector<std::string>{"kv260", "zcu102", "zcu104"}));
  try {
    resolve_target("zcu999");
    FAIL() << "unknown target accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kv260"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_target("/nonexistent/t.yaml"), Error);
}

// The one YAML error format (dpushard/yaml/yaml_reader.hpp): "bad.yaml:LINE:COL: field: what".
void expect_one_line_naming(const std::string& message, const std::string& field,
                            const std::string& what) {
  EXPECT_TRUE(std::regex_search(message, std::regex("^bad\\.yaml:[0-9]+:[0-9]+: "))) << message;
  EXPECT_NE(message.find(": " + field + ": "), std::string::npos) << message;
  EXPECT_NE(message.find(what), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(TargetErrors, MissingFieldIsNamed) {
  expect_one_line_naming(error_of(replaced("  clock_mhz: 300[^\n]*\n", "")), "dpu.clock_mhz",
                         "missing");
  expect_one_line_naming(error_of(replaced("\ncpu:\n", "\ncpu_typo:\n")), "cpu_typo",
                         "unknown key (allowed: name, dpu, memory, overheads, host, cpu)");
  expect_one_line_naming(error_of(replaced("  alu_pixel_parallelism: 4\n", "")),
                         "dpu.alu_pixel_parallelism", "missing");
  expect_one_line_naming(error_of(replaced("  per_frame_us: [0-9.]+\n", "")), "host.per_frame_us",
                         "missing");
  expect_one_line_naming(error_of(replaced("    transcendental: [0-9.]+\n", "")),
                         "cpu.fallback_gflops.transcendental", "missing");
  expect_one_line_naming(error_of(replaced("  cores: 1 ", "  cores: 0 ")), "dpu.cores", "outside");
  // The memory available to models: required like every other field, a whole count of MiB.
  expect_one_line_naming(error_of(replaced("  model_mib: [0-9]+\n", "")), "memory.model_mib",
                         "missing");
  expect_one_line_naming(error_of(replaced("  min_op_cycles: [0-9.]+\n", "")), "dpu.min_op_cycles",
                         "missing");
  expect_one_line_naming(error_of(replaced("alu_min_op_cycles: [0-9.]+", "alu_min_op_cycles: -1")),
                         "dpu.alu_min_op_cycles", "outside");
  expect_one_line_naming(error_of(replaced("model_mib: [0-9]+", "model_mib: 0")),
                         "memory.model_mib", "outside");
  expect_one_line_naming(error_of(replaced("model_mib: [0-9]+", "model_mib: lots")),
                         "memory.model_mib", "integer");
}

TEST(TargetErrors, BadTypeIsNamedWithItsLine) {
  const std::string msg = error_of(replaced("clock_mhz: 300", "clock_mhz: fast"));
  expect_one_line_naming(msg, "dpu.clock_mhz", "expected a number");
  EXPECT_EQ(msg.rfind("bad.yaml:10:14: ", 0), 0u) << msg;  // the value's line and column
  expect_one_line_naming(error_of(replaced("pixel_parallelism: 8", "pixel_parallelism: 8.5")),
                         "dpu.pixel_parallelism", "integer");
  expect_one_line_naming(
      error_of(replaced("channel_augmentation: true", "channel_augmentation: 3")),
      "dpu.channel_augmentation", "true or false");
  expect_one_line_naming(error_of(replaced("  gemm: [0-9.]+", "  gemm: [5.2]")),
                         "cpu.fallback_gflops.gemm", "expected a number");
}

// The DPU limits are the DPU's op rules (targets/dpu/dpuczdx8g.yaml, the split oracle's file),
// not a target's: every target derives the same limits from them, and a target that still
// lists `limits:` is refused with a line saying where they are now.
TEST(Target, LimitsComeFromTheDpuRules) {
  const DpuRules& rules = builtin_dpu_rules();
  std::vector<std::string> cpu_types;
  for (const auto& [type, rule] : rules.ops)
    if (rule.device == Device::Cpu) cpu_types.push_back(type);
  for (const auto& name : builtin_target_names()) {
    const Target t = builtin_target(name);
    EXPECT_EQ(t.cpu_ops, cpu_types) << name;
    EXPECT_EQ(t.kernel_max, rules.ops.at("conv2d").kernel->second) << name;
    EXPECT_EQ(t.stride_max, rules.ops.at("conv2d").stride->second) << name;
    EXPECT_EQ(t.max_kernel_icgroups, *rules.ops.at("conv2d").kernel_channel_budget) << name;
    EXPECT_DOUBLE_EQ(t.leaky_alpha, rules.ops.at("leaky-relu").alphas.at(0)) << name;
  }
  for (const char* type : {"softmax", "layernorm", "gelu", "sigmoid", "tanh"})
    EXPECT_NE(std::find(cpu_types.begin(), cpu_types.end(), type), cpu_types.end()) << type;
  expect_one_line_naming(error_of(shipped_text() + "limits:\n  kernel: [1, 16]\n"), "limits",
                         "targets/dpu/dpuczdx8g.yaml");
}

TEST(TargetErrors, OutOfRangeIsNamed) {
  expect_one_line_naming(
      error_of(replaced("compute_efficiency: [0-9.]+", "compute_efficiency: 1.5")),
      "dpu.compute_efficiency", "outside");
  expect_one_line_naming(error_of(replaced("\n  efficiency: 0.7", "\n  efficiency: -1")),
                         "memory.efficiency", "outside");
}

TEST(TargetErrors, NotYamlOrNotAMapping) {
  EXPECT_NE(error_of("dpu: [1, 2").find("not valid YAML"), std::string::npos);
  EXPECT_EQ(error_of("- 1\n- 2\n"), "bad.yaml:1:1: (top): expected a map");
  EXPECT_EQ(error_of(shipped_text()), "");
}

}  // namespace
}  // namespace dpushard
