// The backends compiled into this build, chosen by name.

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dpushard/backend.hpp"
#include "dpushard/error.hpp"
#include "ref/ref_backend.hpp"

namespace dpushard {

namespace {

struct BackendEntry {
  std::string_view name;
  std::unique_ptr<Backend> (*make)(const BackendOptions&);
};

// Later backends (cpu, sim, vart) add their line here.
constexpr BackendEntry kBackends[] = {
    {"ref", &make_ref_backend},
};

// Backends registered at startup from outside this library (register_backend).
struct Registered {
  std::mutex mutex;
  std::vector<std::pair<std::string, BackendFactory>> entries;
  std::vector<std::pair<std::string, DeviceProbe>> probes;
};

Registered& registered() {
  static Registered r;
  return r;
}

}  // namespace

void register_backend(const std::string& name, BackendFactory factory) {
  Registered& r = registered();
  const std::lock_guard lock(r.mutex);
  for (auto& entry : r.entries)
    if (entry.first == name) {
      entry.second = std::move(factory);
      return;
    }
  r.entries.emplace_back(name, std::move(factory));
}

void register_device_probe(const std::string& name, DeviceProbe probe) {
  Registered& r = registered();
  const std::lock_guard lock(r.mutex);
  for (auto& entry : r.probes)
    if (entry.first == name) {
      entry.second = std::move(probe);
      return;
    }
  r.probes.emplace_back(name, std::move(probe));
}

DeviceInfo probe_device(std::string_view name, const BackendOptions& options) {
  DeviceProbe probe;
  {
    Registered& r = registered();
    const std::lock_guard lock(r.mutex);
    for (const auto& entry : r.probes)
      if (entry.first == name) probe = entry.second;
  }
  return probe ? probe(options) : DeviceInfo{};
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& entry : kBackends) names.emplace_back(entry.name);
  Registered& r = registered();
  const std::lock_guard lock(r.mutex);
  for (const auto& entry : r.entries) names.push_back(entry.first);
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  for (const auto& entry : kBackends)
    if (entry.name == name) return entry.make(options);
  BackendFactory factory;
  {
    Registered& r = registered();
    const std::lock_guard lock(r.mutex);
    for (const auto& entry : r.entries)
      if (entry.first == name) factory = entry.second;
  }
  if (factory) return factory(options);
  if (name == "vart")  // optional at build time (dpushard/vart_backend.hpp)
    throw Error(
        "backend 'vart' is not built here: configure with -DDPUSHARD_WITH_VART=ON where Vitis "
        "AI's runtime is installed");
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown backend '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<QTensor> input_specs(const Graph& graph) {
  std::vector<QTensor> specs;
  for (const Op* data : graph.inputs()) {
    if (data->type == "data-fix") {  // compiled files: the input op is itself fixed-point
      const auto fix_point = fix_point_of(graph, data->name);
      if (!fix_point) throw Error("input '" + data->name + "' has no fix_point attribute");
      specs.push_back(QTensor{data->name, data->output.shape, *fix_point, {}});
      continue;
    }
    const Op* fix = nullptr;
    for (const Op* consumer : graph.consumers(data->name))
      if (consumer->type == "fix") {
        if (fix != nullptr) throw Error("input '" + data->name + "' feeds more than one fix op");
        fix = consumer;
      }
    if (fix == nullptr) throw Error("input '" + data->name + "' has no fix op after it");
    const std::int64_t fix_point = int_attr(fix->attrs, "fix_point", std::int64_t{1} << 20);
    if (fix_point < -64 || fix_point > 64)
      throw Error("fix op '" + fix->name + "': missing or out-of-range attribute 'fix_point'");
    std::vector<std::int64_t> shape = fix->output.shape;
    if (shape.empty()) shape = data->output.shape;
    specs.push_back(QTensor{fix->name, std::move(shape), static_cast<int>(fix_point), {}});
  }
  return specs;
}

}  // namespace dpushard
