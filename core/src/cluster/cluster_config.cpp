// cluster.yaml: the nodes of a cluster, its link speed and its token file, read with the one
// YAML reader (dpushard/yaml_reader.hpp).

#include <cctype>
#include <set>

#include "dpushard/cluster.hpp"
#include "dpushard/net.hpp"
#include "dpushard/regular_file.hpp"
#include "dpushard/yaml_reader.hpp"
#include "net/connection.hpp"

namespace dpushard::cluster {

namespace {

const std::set<std::string> kBackends = {"ref", "cpu", "sim", "vart"};

NodeConfig read_node(const yaml::Value& item) {
  const yaml::Map m = item.map({"name", "address", "backend", "target"});
  NodeConfig node;
  node.line = item.line();
  const yaml::Value name = m.get("name");
  node.name = name.nonempty_text();
  const std::string named = "node '" + node.name + "'";
  for (char c : node.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      name.fail(named + ": a name may hold letters, digits, '-', '_' and '.' only");
  const yaml::Value address = m.get("address");
  node.address = address.nonempty_text();
  try {
    net::split_host_port(node.address, named);
  } catch (const Error& e) {
    address.fail(e.what());
  }
  if (auto backend = m.find("backend")) {
    node.backend = backend->nonempty_text();
    if (kBackends.count(node.backend) == 0)
      backend->fail("unknown backend '" + node.backend + "' (known: cpu, ref, sim, vart)");
  }
  if (auto target = m.find("target")) node.target = target->nonempty_text();
  return node;
}

}  // namespace

ClusterConfig parse_cluster_config(const std::string& text, const std::string& origin,
                                   const std::filesystem::path& base_dir) {
  const yaml::Document doc = yaml::Document::parse(text, origin);
  const yaml::Map root =
      doc.root().map({"nodes", "link_gbps", "link_latency_us", "link_emulation", "token_file"});

  ClusterConfig config;
  config.source = origin;
  const yaml::Value nodes = root.get("nodes");
  const std::vector<yaml::Value> items = nodes.list(1);
  std::set<std::string> names, addresses;
  for (const yaml::Value& item : items) {
    NodeConfig node = read_node(item);
    if (!names.insert(node.name).second) item.fail("node '" + node.name + "' is listed twice");
    if (!addresses.insert(node.address).second)
      item.fail("node '" + node.name + "': address " + node.address +
                " is already used by another node");
    config.nodes.push_back(std::move(node));
  }
  if (auto link = root.find("link_gbps")) {
    config.link_gbps = link->number();
    if (!(config.link_gbps > 0)) link->fail("must be positive");
  }
  if (auto latency = root.find("link_latency_us")) config.link_latency_us = latency->number(0, 1e7);
  if (auto mode = root.find("link_emulation"))
    config.link_emulation = mode->choice<LinkEmulation>({{"auto", LinkEmulation::Auto},
                                                         {"paced", LinkEmulation::Paced},
                                                         {"off", LinkEmulation::Off}});
  if (auto token = root.find("token_file")) {
    const std::string token_file = token->nonempty_text();
    config.token_file = std::filesystem::path(token_file).is_absolute()
                            ? std::filesystem::path(token_file)
                            : base_dir / token_file;
    try {
      config.token = net::read_token_file(config.token_file);
    } catch (const Error& e) {
      token->fail(e.what());
    }
  }
  return config;
}

ClusterConfig read_cluster_config(const std::filesystem::path& path) {
  const std::string text = read_regular_file(path, "cluster file " + path.string());
  return parse_cluster_config(text, path.string(), path.parent_path());
}

}  // namespace dpushard::cluster
