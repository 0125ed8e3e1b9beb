// The registry: every backend known to this program, by its descriptor (dpushard/exec/backend.hpp).

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cpu/cpu_description.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/exec/backend.hpp"
#include "ref/ref_backend.hpp"
#include "vart/vart_description.hpp"

namespace dpushard {

namespace {

// Every backend known to this program, in registration order. `ref` (the definition the
// others are checked against) and the descriptions of `cpu` and `vart` (kept in dpushard_exec
// so that a program without oneDNN or VART still knows their traits and says how to build
// them) are there from the start; register_builtin_backends() adds the rest.
struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<const BackendDescriptor>> entries;

  Registry() {
    entries.push_back(std::make_shared<const BackendDescriptor>(ref_backend_descriptor()));
    entries.push_back(std::make_shared<const BackendDescriptor>(cpu_backend_description()));
    entries.push_back(std::make_shared<const BackendDescriptor>(vart_backend_description()));
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string text_of(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& n : names) text += (text.empty() ? "" : ", ") + n;
  return text;
}

}  // namespace

void register_backend(BackendDescriptor descriptor) {
  if (descriptor.name.empty()) throw Error("register_backend: a backend needs a name");
  auto entry = std::make_shared<const BackendDescriptor>(std::move(descriptor));
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  for (auto& e : r.entries)
    if (e->name == entry->name) {
      e = std::move(entry);
      return;
    }
  r.entries.push_back(std::move(entry));
}

std::shared_ptr<const BackendDescriptor> find_backend(std::string_view name) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  for (const auto& e : r.entries)
    if (e->name == name) return e;
  return nullptr;
}

std::vector<std::shared_ptr<const BackendDescriptor>> backend_descriptors() {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return r.entries;
}

std::string backend_names_text(bool built_only) {
  std::vector<std::string> names;
  for (const auto& d : backend_descriptors())
    if (!built_only || d->make) names.push_back(d->name);
  std::sort(names.begin(), names.end());
  return text_of(names);
}

std::shared_ptr<const BackendDescriptor> backend_descriptor(std::string_view name) {
  if (auto d = find_backend(name)) return d;
  throw Error("unknown backend '" + std::string(name) + "' (known: " + backend_names_text(false) +
              ")");
}

BackendTraits backend_traits(std::string_view name) { return backend_descriptor(name)->traits; }

std::map<std::string, std::string> backend_settings(std::string_view name,
                                                    const BackendOptions& options) {
  const auto d = backend_descriptor(name);
  std::map<std::string, std::string> settings;
  for (const BackendOptionSpec& spec : d->options)
    settings[spec.key] = spec.flag && spec.default_value.empty() ? "false" : spec.default_value;
  for (const auto& [key, value] : options.settings) {
    if (settings.count(key) == 0) {
      std::vector<std::string> keys;
      for (const BackendOptionSpec& spec : d->options) keys.push_back(spec.key);
      throw Error("backend '" + d->name + "' has no option '" + key + "'" +
                  (keys.empty() ? std::string(" (it takes none)")
                                : " (its options: " + text_of(keys) + ")"));
    }
    settings[key] = value;
  }
  return settings;
}

bool setting_flag(const std::map<std::string, std::string>& settings, const std::string& key,
                  std::string_view backend) {
  const auto it = settings.find(key);
  if (it == settings.end() || it->second == "false") return false;
  if (it->second == "true") return true;
  throw Error("backend '" + std::string(backend) + "': option '" + key +
              "' is true or false, not '" + it->second + "'");
}

BackendSetup prepare_backend(std::string_view name, const BackendOptions& options) {
  const auto d = backend_descriptor(name);
  (void)backend_settings(name, options);  // an unknown key fails here, before any job
  return d->prepare ? d->prepare(options) : BackendSetup{};
}

DeviceInfo probe_device(std::string_view name, const BackendOptions& options) {
  const auto d = find_backend(name);
  return d && d->probe ? d->probe(options) : DeviceInfo{};
}

std::shared_ptr<const BackendDescriptor> backend_command(int argc, char** argv) {
  if (argc < 2) return nullptr;
  for (const auto& d : backend_descriptors())
    if (!d->command.empty() && d->command == argv[1]) return d;
  return nullptr;
}

int run_backend_command(const BackendDescriptor& backend, int argc, char** argv) {
  if (backend.run_command) return backend.run_command(argc, argv);
  std::cerr << "dpushard: error: " << backend.command << ": backend '" << backend.name
            << "' is not built here: " << backend.not_built << "\n";
  return 2;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const auto& d : backend_descriptors())
    if (d->make) names.push_back(d->name);
  return names;
}

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  const auto d = find_backend(name);
  if (!d || (!d->make && d->not_built.empty()))
    throw Error("unknown backend '" + std::string(name) + "' (known: " + backend_names_text(true) +
                ")");
  if (!d->make) throw Error("backend '" + d->name + "' is not built here: " + d->not_built);
  (void)backend_settings(name, options);
  return d->make(options);
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
