// cluster.yaml: the schema, and errors that name the line at fault.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/net/net.hpp"
#include "dpushard/plan/plan_format.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard::cluster {
namespace {

std::string error_of(const std::string& yaml, const std::filesystem::path& dir = ".") {
  try {
    parse_cluster_config(yaml, "cluster.yaml", dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

// cluster.yaml names backends the registry knows: every built-in one, as in the program.
[[maybe_unused]] const bool kBackendsRegistered = [] {
  dpushard::register_builtin_backends();
  return true;
}();

TEST(ClusterConfig, ReadsNodesLinkAndToken) {
  const auto dir = std::filesystem::temp_directory_path() / "dpushard-cluster-config-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "token") << "s3cret\n";
  const ClusterConfig config = parse_cluster_config(
      "token_file: token\n"
      "link_gbps: 2.5\n"
      "nodes:\n"
      "  - {name: w0, address: 127.0.0.1:7000, backend: ref, target: host}\n"
      "  - name: w1\n"
      "    address: 127.0.0.2:7001\n",
      "cluster.yaml", dir);
  ASSERT_EQ(config.nodes.size(), 2u);
  EXPECT_EQ(config.nodes[0].name, "w0");
  EXPECT_EQ(config.nodes[0].backend, "ref");
  EXPECT_EQ(config.nodes[0].target, "host");
  EXPECT_EQ(config.nodes[0].line, 4);
  EXPECT_EQ(config.nodes[1].address, "127.0.0.2:7001");
  EXPECT_EQ(config.nodes[1].backend, "");
  EXPECT_EQ(config.nodes[1].line, 5);
  EXPECT_DOUBLE_EQ(config.link_gbps, 2.5);
  EXPECT_EQ(config.token, "s3cret");
  EXPECT_EQ(config.token_file, dir / "token");
  std::filesystem::remove_all(dir);
}

TEST(ClusterConfig, ReadsTheEmulatedLink) {
  const char* nodes = "nodes:\n  - {name: w0, address: 'h:1', backend: sim}\n";
  const ClusterConfig plain = parse_cluster_config(nodes, "cluster.yaml", ".");
  EXPECT_EQ(plain.link_emulation, LinkEmulation::Auto);
  // By default the one-way latency the planner prices a transfer with (ethernet_link.hpp).
  EXPECT_DOUBLE_EQ(plain.link_latency_us, 100);
  const ClusterConfig paced = parse_cluster_config(
      std::string("link_emulation: paced\nlink_latency_us: 150\n") + nodes, "cluster.yaml", ".");
  EXPECT_EQ(paced.link_emulation, LinkEmulation::Paced);
  EXPECT_DOUBLE_EQ(paced.link_latency_us, 150);
  EXPECT_EQ(
      parse_cluster_config(std::string("link_emulation: off\n") + nodes, "c", ".").link_emulation,
      LinkEmulation::Off);
  // auto: paced only when every node runs sim
  EXPECT_TRUE(link_is_paced(plain, {"sim", "sim"}));
  EXPECT_FALSE(link_is_paced(plain, {"sim", "vart"}));
  EXPECT_FALSE(link_is_paced(plain, {"cpu"}));
  EXPECT_TRUE(link_is_paced(paced, {"cpu"}));
  ClusterConfig off = plain;
  off.link_emulation = LinkEmulation::Off;
  EXPECT_FALSE(link_is_paced(off, {"sim"}));
  EXPECT_EQ(error_of(std::string("link_emulation: tc\n") + nodes),
            "cluster.yaml:1:17: link_emulation: expected one of auto, paced, off, got 'tc'");
  EXPECT_EQ(error_of(std::string("link_latency_us: -3\n") + nodes),
            "cluster.yaml:1:18: link_latency_us: is -3, outside [0, 1e+07]");
}

// The one YAML error format (dpushard/yaml/yaml_reader.hpp): FILE:LINE:COL: path.to.key: message.
TEST(ClusterConfig, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("nodes:\n  - name: w0\n    address: 127.0.0.1:1\n    adress: x\n"),
            "cluster.yaml:4:5: nodes[0].adress: unknown key (allowed: name, address, backend, "
            "target)");
  EXPECT_EQ(error_of("nodes:\n  - name: w0\n"), "cluster.yaml:2:5: nodes[0].address: missing");
  EXPECT_EQ(error_of("nodes:\n  - name: w0\n    address: localhost\n"),
            "cluster.yaml:3:14: nodes[0].address: node 'w0': address 'localhost' is not HOST:PORT");
  EXPECT_EQ(error_of("nodes:\n  - name: w0\n    address: h:99999\n"),
            "cluster.yaml:3:14: nodes[0].address: node 'w0': address 'h:99999' has no valid port");
  EXPECT_EQ(error_of("nodes:\n  - {name: w0, address: 'h:1'}\n  - {name: w0, address: 'h:2'}\n"),
            "cluster.yaml:3:5: nodes[1]: node 'w0' is listed twice");
  EXPECT_EQ(error_of("nodes:\n  - {name: w0, address: 'h:1'}\n  - {name: w1, address: 'h:1'}\n"),
            "cluster.yaml:3:5: nodes[1]: node 'w1': address h:1 is the address of node 'w0' (h "
            "port 1)");
  EXPECT_EQ(
      error_of("nodes:\n  - {name: w0, address: 'h:1', backend: gpu}\n"),
      "cluster.yaml:2:41: nodes[0].backend: unknown backend 'gpu' (known: cpu, ref, sim, vart)");
  EXPECT_EQ(error_of("link_gbps: fast\nnodes:\n  - {name: w0, address: 'h:1'}\n"),
            "cluster.yaml:1:12: link_gbps: expected a number");
  EXPECT_EQ(error_of("link_gbps: -1\nnodes:\n  - {name: w0, address: 'h:1'}\n"),
            "cluster.yaml:1:12: link_gbps: must be positive");
  EXPECT_EQ(error_of("nodes: []\n"), "cluster.yaml:1:8: nodes: expected a list of at least 1");
  EXPECT_EQ(error_of("link_gbps: 1\n"), "cluster.yaml:1:1: nodes: missing");
  EXPECT_EQ(error_of("nodez: 1\n"),
            "cluster.yaml:1:1: nodez: unknown key (allowed: nodes, link_gbps, link_latency_us, "
            "link_emulation, token_file)");
  EXPECT_EQ(error_of("nodes:\n  - {name: 'w 0', address: 'h:1'}\n"),
            "cluster.yaml:2:12: nodes[0].name: node 'w 0': a name may hold letters, digits, '-', "
            "'_' and '.' only");
  EXPECT_NE(error_of("nodes: [\n").find("cluster.yaml:"), std::string::npos);
  // A complex key (found by fuzz_cluster_yaml: "? ? !") once escaped as a yaml-cpp exception.
  EXPECT_EQ(error_of("? ? !\n"), "cluster.yaml:1:3: (top): a key must be a plain name");
  const std::string missing = error_of(
      "token_file: no-such-token\nnodes:\n  - {name: w0, address: 'h:1'}\n", "/nonexistent");
  EXPECT_EQ(
      missing.rfind("cluster.yaml:1:13: token_file: token file '/nonexistent/no-such-token'", 0),
      0u)
      << missing;
}

// One worker under three spellings of its address once passed this check and failed the
// run at LOAD with "malformed: job id already in use".
TEST(ClusterConfig, AddressesAreComparedAsEndpointsNotAsText) {
  EXPECT_EQ(error_of("nodes:\n  - {name: a, address: '127.0.0.1:17100'}\n"
                     "  - {name: b, address: '127.1:17100'}\n"),
            "cluster.yaml:3:5: nodes[1]: node 'b': address 127.1:17100 is the address of node "
            "'a' (127.0.0.1 port 17100)");
  EXPECT_EQ(error_of("nodes:\n  - {name: a, address: '127.0.0.1:17100'}\n"
                     "  - {name: b, address: '2130706433:17100'}\n"),
            "cluster.yaml:3:5: nodes[1]: node 'b': address 2130706433:17100 is the address of "
            "node 'a' (127.0.0.1 port 17100)");
  EXPECT_EQ(error_of("nodes:\n  - {name: a, address: '[::1]:7'}\n"
                     "  - {name: b, address: '[0:0::1]:7'}\n"),
            "cluster.yaml:3:5: nodes[1]: node 'b': address [0:0::1]:7 is the address of node 'a' "
            "(::1 port 7)");
  EXPECT_EQ(error_of("nodes:\n  - {name: a, address: 'Board-1:7'}\n"
                     "  - {name: b, address: 'board-1:7'}\n"),
            "cluster.yaml:3:5: nodes[1]: node 'b': address board-1:7 is the address of node 'a' "
            "(board-1 port 7)");
  // Same host, other port; other host, same port: two workers.
  EXPECT_EQ(error_of("nodes:\n  - {name: a, address: '127.0.0.1:1'}\n"
                     "  - {name: b, address: '127.1:2'}\n  - {name: c, address: '127.2:1'}\n"),
            "accepted");
}

// A 5,000-byte node name was accepted, refused by the worker, and echoed in a 10 KB line.
TEST(ClusterConfig, StringsAreBoundedWhereTheyAreReadAndNeverEchoed) {
  const std::string huge(5000, 'n');
  const auto check = [&](const std::string& yaml, const std::string& want) {
    const std::string error = error_of(yaml);
    EXPECT_EQ(error, want);
    EXPECT_LT(error.size(), 200u);
  };
  check("nodes:\n  - {name: " + huge + ", address: 'h:1'}\n",
        "cluster.yaml:2:12: nodes[0].name: is 5000 bytes long, at most 64 are allowed");
  check("nodes:\n  - {name: w, address: '" + huge + ":1'}\n",
        "cluster.yaml:2:24: nodes[0].address: is 5002 bytes long, at most 262 are allowed");
  check("nodes:\n  - {name: w, address: 'h:1', backend: " + huge + "}\n",
        "cluster.yaml:2:40: nodes[0].backend: is 5000 bytes long, at most 64 are allowed");
  check("nodes:\n  - {name: w, address: 'h:1', target: " + huge + huge + "}\n",
        "cluster.yaml:2:39: nodes[0].target: is 10000 bytes long, at most 4096 are allowed");
  check("link_emulation: " + huge + "\nnodes:\n  - {name: w, address: 'h:1'}\n",
        "cluster.yaml:1:17: link_emulation: is 5000 bytes long, at most 64 are allowed");
  check("token_file: " + huge + huge + "\nnodes:\n  - {name: w, address: 'h:1'}\n",
        "cluster.yaml:1:13: token_file: is 10000 bytes long, at most 4096 are allowed");
  EXPECT_EQ(error_of("nodes:\n  - {name: " + std::string(64, 'n') + ", address: 'h:1'}\n"),
            "accepted");
}

TEST(ClusterConfig, MissingFileIsNamed) {
  try {
    read_cluster_config("/nonexistent/cluster.yaml");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/cluster.yaml"), std::string::npos);
  }
}

// A folder or a FIFO where a file is expected once ended in std::bad_alloc or hung forever.
// Every reader refuses them the same way: one line naming the path, at once.
TEST(RegularFiles, FolderOrFifoWhereAFileIsExpectedIsNamedNotReadOrWaitedFor) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("dpushard-regular-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  for (const std::string kind : {"folder", "fifo"}) {
    const std::filesystem::path plan_dir = dir / ("plan-" + kind);
    std::filesystem::create_directories(plan_dir);
    const std::filesystem::path path = dir / kind, plan_yaml = plan_dir / "plan.yaml";
    for (const auto& p : {path, plan_yaml}) {
      if (kind == "folder")
        std::filesystem::create_directory(p);
      else
        ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    }
    const std::string refusal =
        kind == "folder" ? "is a directory, not a file" : "is a FIFO, not a regular file";
    const std::vector<std::pair<std::filesystem::path, std::function<void()>>> readers = {
        {path, [&] { net::read_token_file(path); }},
        {path, [&] { read_cluster_config(path); }},
        {path, [&] { read_xmodel(path); }},
        {plan_yaml, [&] { read_plan(plan_dir); }},
        {path, [&] {
           parse_cluster_config("token_file: " + path.string() +
                                    "\nnodes:\n  - {name: a, address: \"127.0.0.1:1\"}\n",
                                "cluster.yaml", dir);
         }}};
    for (const auto& [named, read] : readers) {
      std::string what = "accepted";
      try {
        read();
      } catch (const Error& e) {
        what = e.what();
      }
      EXPECT_NE(what.find(named.string()), std::string::npos) << what;
      EXPECT_NE(what.find(refusal), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dpushard::cluster
