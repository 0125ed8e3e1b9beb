// cluster.yaml: the nodes of a cluster, its link speed and its token file, read with the one
// YAML reader (dpushard/yaml/yaml_reader.hpp).

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cctype>
#include <map>
#include <set>

#include "dpushard/base/regular_file.hpp"
#include "dpushard/cluster/cluster.hpp"
#include "dpushard/exec/backend.hpp"
#include "dpushard/net/client.hpp"
#include "dpushard/net/net.hpp"
#include "dpushard/yaml/yaml_reader.hpp"

namespace dpushard::cluster {

namespace {

// Longest strings read from cluster.yaml: a name travels in every handshake and log line,
// an address is a host name (253) and a port, a target or token file is a path. Checked
// before the text is used anywhere, so an error never echoes a huge value.
constexpr std::size_t kMaxNameBytes = 64;
constexpr std::size_t kMaxAddressBytes = 262;
constexpr std::size_t kMaxPathBytes = 4096;

std::string bounded_text(const yaml::Value& value, std::size_t max_bytes) {
  const std::string text = value.nonempty_text();
  if (text.size() > max_bytes)
    value.fail("is " + std::to_string(text.size()) + " bytes long, at most " +
               std::to_string(max_bytes) + " are allowed");
  return text;
}

// The address as the socket will see it: a numeric host in any spelling inet_aton and
// getaddrinfo accept (127.1, 2130706433, 0x7f.1, ::ffff:127.0.0.1 for IPv6) becomes its
// canonical text, so one worker cannot be listed twice under two spellings. A host name
// is compared in lower case (names that resolve to one address are caught by `run` after
// connecting, docs/cluster.md).
std::string endpoint_key(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string key;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0 && found != nullptr) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* address =
        found->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr);
    if (::inet_ntop(found->ai_family, address, text, sizeof text) != nullptr) key = text;
    ::freeaddrinfo(found);
  }
  if (key.empty())
    for (char c : host) key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return key + " port " + std::to_string(port);
}

NodeConfig read_node(const yaml::Value& item, std::string& endpoint) {
  const yaml::Map m = item.map({"name", "address", "backend", "target"});
  NodeConfig node;
  node.line = item.line();
  const yaml::Value name = m.get("name");
  node.name = bounded_text(name, kMaxNameBytes);
  const std::string named = "node '" + node.name + "'";
  for (char c : node.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      name.fail(named + ": a name may hold letters, digits, '-', '_' and '.' only");
  const yaml::Value address = m.get("address");
  node.address = bounded_text(address, kMaxAddressBytes);
  try {
    const auto [host, port] = net::split_host_port(node.address, named);
    endpoint = endpoint_key(host, port);
  } catch (const Error& e) {
    address.fail(e.what());
  }
  if (auto backend = m.find("backend")) {
    node.backend = bounded_text(*backend, kMaxNameBytes);
    // Any backend this program knows, built here or not (a head without VART still runs
    // vart workers): the registry's descriptors (dpushard/exec/backend.hpp).
    if (!find_backend(node.backend))
      backend->fail("unknown backend '" + node.backend + "' (known: " + backend_names_text(false) +
                    ")");
  }
  if (auto target = m.find("target")) node.target = bounded_text(*target, kMaxPathBytes);
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
  std::set<std::string> names;
  std::map<std::string, std::string> endpoints;  // endpoint_key -> the node listed with it
  for (const yaml::Value& item : items) {
    std::string endpoint;
    NodeConfig node = read_node(item, endpoint);
    if (!names.insert(node.name).second) item.fail("node '" + node.name + "' is listed twice");
    if (const auto [it, fresh] = endpoints.emplace(endpoint, node.name); !fresh)
      item.fail("node '" + node.name + "': address " + node.address + " is the address of node '" +
                it->second + "' (" + endpoint + ")");
    config.nodes.push_back(std::move(node));
  }
  if (auto link = root.find("link_gbps")) {
    config.link_gbps = link->number();
    if (!(config.link_gbps > 0)) link->fail("must be positive");
  }
  if (auto latency = root.find("link_latency_us")) config.link_latency_us = latency->number(0, 1e7);
  if (auto mode = root.find("link_emulation")) {
    bounded_text(*mode, kMaxNameBytes);
    config.link_emulation = mode->choice<LinkEmulation>({{"auto", LinkEmulation::Auto},
                                                         {"paced", LinkEmulation::Paced},
                                                         {"off", LinkEmulation::Off}});
  }
  if (auto token = root.find("token_file")) {
    const std::string token_file = bounded_text(*token, kMaxPathBytes);
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
