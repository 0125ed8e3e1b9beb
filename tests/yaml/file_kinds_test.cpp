// Every input YAML file kind (plan.yaml, an oracle file, a target, cluster.yaml) reports an
// unknown key and a value of the wrong type in the one format: FILE:LINE:COL: path: message.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <regex>
#include <string>

#include "dpushard/base/error.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/perf/perf.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/split/oracle.hpp"
#include "xmodel/fixtures.hpp"

namespace dpushard {
namespace {

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// FILE:LINE:COL: PATH: MESSAGE, on one line.
void expect_format(const std::string& message, const std::string& file, const std::string& path,
                   const std::string& what) {
  static const std::regex format(R"(^([^:]+):([0-9]+):([0-9]+): ([^ :]+): (.+)$)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(message, m, format)) << message;
  EXPECT_EQ(m[1], file) << message;
  EXPECT_GT(std::stoi(m[2]), 0) << message;
  EXPECT_GT(std::stoi(m[3]), 0) << message;
  EXPECT_EQ(m[4], path) << message;
  EXPECT_THAT(m[5].str(), ::testing::HasSubstr(what)) << message;
}

TEST(YamlFileKinds, PlanUnknownKeyAndWrongType) {
  const auto plan = [](const std::string& text) {
    return error_of([&] { plan_from_yaml(text, "plan.yaml"); });
  };
  expect_format(plan("version: 1\nmodel: {file: m.xmodel, nme: m}\n"), "plan.yaml", "model.nme",
                "unknown key (allowed: file, name, sha256, inputs, outputs)");
  expect_format(plan("version: one\n"), "plan.yaml", "version", "expected an integer");
}

TEST(YamlFileKinds, OracleUnknownKeyAndWrongType) {
  const std::string base = Oracle::builtin().text();
  const auto oracle = [](const std::string& text) {
    return error_of([&] { Oracle::parse(text, "oracle.yaml"); });
  };
  expect_format(oracle(replaced(base, "  softmax: {device: CPU", "  softmax: {devise: CPU")),
                "oracle.yaml", "ops.softmax.devise",
                "unknown key (allowed: device, limits, source)");
  expect_format(oracle(replaced(base, "      kernel: [1, 16]", "      kernel: [1, sixteen]")),
                "oracle.yaml", "ops.conv2d.limits.kernel[1]", "expected an integer");
}

TEST(YamlFileKinds, TargetUnknownKeyAndWrongType) {
  const std::string base = testing::read_bytes(DPUSHARD_SOURCE_DIR "/targets/kv260_b4096.yaml");
  const auto target = [](const std::string& text) {
    return error_of([&] { parse_target(text, "kv260.yaml"); });
  };
  expect_format(target(replaced(base, "  clock_mhz: 300", "  clock_mhz: 300\n  clock_ghz: 0.3")),
                "kv260.yaml", "dpu.clock_ghz", "unknown key (allowed: arch, clock_mhz, ");
  expect_format(target(replaced(base, "clock_mhz: 300", "clock_mhz: fast")), "kv260.yaml",
                "dpu.clock_mhz", "expected a number");
}

TEST(YamlFileKinds, ClusterUnknownKeyAndWrongType) {
  const auto cluster = [](const std::string& text) {
    return error_of([&] { cluster::parse_cluster_config(text, "cluster.yaml", "."); });
  };
  expect_format(cluster("nodes:\n  - {name: w0, address: 'h:1', adress: x}\n"), "cluster.yaml",
                "nodes[0].adress", "unknown key (allowed: name, address, backend, target)");
  expect_format(cluster("link_gbps: fast\nnodes:\n  - {name: w0, address: 'h:1'}\n"),
                "cluster.yaml", "link_gbps", "expected a number");
}

}  // namespace
}  // namespace dpushard
