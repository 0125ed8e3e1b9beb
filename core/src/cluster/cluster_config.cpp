// cluster.yaml: the nodes of a cluster, its link speed and its token file.

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <set>

#include "dpushard/cluster.hpp"
#include "dpushard/net.hpp"
#include "dpushard/regular_file.hpp"
#include "net/connection.hpp"

namespace dpushard::cluster {

namespace {

const std::set<std::string> kBackends = {"ref", "cpu", "sim", "vart"};

class Parser {
 public:
  explicit Parser(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const {
    const YAML::Mark mark = node.Mark();
    if (mark.is_null()) throw Error(origin_ + ": " + message);
    throw Error(origin_ + ":" + std::to_string(mark.line + 1) + ": " + message);
  }

  std::string text(const YAML::Node& parent, const std::string& key, const std::string& where,
                   bool required) const {
    const YAML::Node node = parent[key];
    if (!node) {
      if (required) fail(parent, where + ": '" + key + "' is missing");
      return {};
    }
    if (!node.IsScalar()) fail(node, where + ": '" + key + "' must be a string");
    const std::string value = node.as<std::string>();
    if (value.empty()) fail(node, where + ": '" + key + "' is empty");
    return value;
  }

  void only_keys(const YAML::Node& map, const std::set<std::string>& known,
                 const std::string& where) const {
    for (const auto& entry : map) {
      // YAML allows a map or a list as a key ("? ..."): a cluster.yaml key is a plain name.
      if (!entry.first.IsScalar()) fail(entry.first, where + ": a key must be a plain name");
      const std::string key = entry.first.as<std::string>();
      if (known.count(key) == 0) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        fail(entry.first, where + ": unknown key '" + key + "' (known: " + list + ")");
      }
    }
  }

  NodeConfig node(const YAML::Node& item, std::size_t index) const {
    const std::string where = "nodes[" + std::to_string(index) + "]";
    if (!item.IsMap()) fail(item, where + " must be a map with name and address");
    NodeConfig node;
    node.line = item.Mark().line + 1;
    node.name = text(item, "name", where, true);
    const std::string named = "node '" + node.name + "'";
    only_keys(item, {"name", "address", "backend", "target"}, named);
    for (char c : node.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
        fail(item["name"], named + ": a name may hold letters, digits, '-', '_' and '.' only");
    node.address = text(item, "address", named, true);
    try {
      net::split_host_port(node.address, named);
    } catch (const Error& e) {
      fail(item["address"], e.what());
    }
    node.backend = text(item, "backend", named, false);
    if (!node.backend.empty() && kBackends.count(node.backend) == 0)
      fail(item["backend"],
           named + ": unknown backend '" + node.backend + "' (known: cpu, ref, sim, vart)");
    node.target = text(item, "target", named, false);
    return node;
  }

 private:
  std::string origin_;
};

}  // namespace

ClusterConfig parse_cluster_config(const std::string& text, const std::string& origin,
                                   const std::filesystem::path& base_dir) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(origin + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  const Parser parser(origin);
  if (!root.IsMap()) parser.fail(root, "a cluster file is a map with 'nodes'");
  parser.only_keys(root, {"nodes", "link_gbps", "link_latency_us", "link_emulation", "token_file"},
                   "cluster");

  ClusterConfig config;
  config.source = origin;
  const YAML::Node nodes = root["nodes"];
  if (!nodes) parser.fail(root, "'nodes' is missing");
  if (!nodes.IsSequence() || nodes.size() == 0)
    parser.fail(nodes, "'nodes' must be a non-empty list");
  std::set<std::string> names, addresses;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    NodeConfig node = parser.node(nodes[i], i);
    if (!names.insert(node.name).second)
      parser.fail(nodes[i], "node '" + node.name + "' is listed twice");
    if (!addresses.insert(node.address).second)
      parser.fail(nodes[i], "node '" + node.name + "': address " + node.address +
                                " is already used by another node");
    config.nodes.push_back(std::move(node));
  }
  if (const YAML::Node link = root["link_gbps"]) {
    double gbps = 0;
    try {
      gbps = link.as<double>();
    } catch (const YAML::Exception&) {
      parser.fail(link, "'link_gbps' must be a number");
    }
    if (!(gbps > 0)) parser.fail(link, "'link_gbps' must be positive");
    config.link_gbps = gbps;
  }
  if (const YAML::Node latency = root["link_latency_us"]) {
    double us = -1;
    try {
      us = latency.as<double>();
    } catch (const YAML::Exception&) {
      parser.fail(latency, "'link_latency_us' must be a number");
    }
    if (!(us >= 0) || us > 1e7) parser.fail(latency, "'link_latency_us' must be in [0, 1e7]");
    config.link_latency_us = us;
  }
  if (root["link_emulation"]) {
    const std::string mode = parser.text(root, "link_emulation", "cluster", true);
    if (mode == "auto")
      config.link_emulation = LinkEmulation::Auto;
    else if (mode == "paced")
      config.link_emulation = LinkEmulation::Paced;
    else if (mode == "off")
      config.link_emulation = LinkEmulation::Off;
    else
      parser.fail(root["link_emulation"],
                  "'link_emulation' is '" + mode + "' (known: auto, paced, off)");
  }
  const std::string token_file = parser.text(root, "token_file", "cluster", false);
  if (!token_file.empty()) {
    config.token_file = std::filesystem::path(token_file).is_absolute()
                            ? std::filesystem::path(token_file)
                            : base_dir / token_file;
    try {
      config.token = net::read_token_file(config.token_file);
    } catch (const Error& e) {
      parser.fail(root["token_file"], e.what());
    }
  }
  return config;
}

ClusterConfig read_cluster_config(const std::filesystem::path& path) {
  const std::string text = read_regular_file(path, "cluster file " + path.string());
  return parse_cluster_config(text, path.string(), path.parent_path());
}

}  // namespace dpushard::cluster
