// dpushard backends [--json]
// Lists the backends this program knows (dpushard/exec/backend.hpp's registry): built here or only
// described (vart without Vitis AI's runtime), with their traits and their own options. The
// Ansible common role's backend choices are checked against `--json`
// (tests/harness/role_choices.py).

#include <iostream>
#include <memory>
#include <string>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/exec/backend.hpp"

namespace dpushard::cli {
namespace {

std::string compiled_text(CompiledModels compiled) {
  switch (compiled) {
    case CompiledModels::Accepted:
      return "accepted";
    case CompiledModels::Required:
      return "required";
    case CompiledModels::Lowered:
      break;
  }
  return "lowered";
}

std::string device_text(DeviceKind device) {
  switch (device) {
    case DeviceKind::ModeledDpu:
      return "modeled-dpu";
    case DeviceKind::Dpu:
      return "dpu";
    case DeviceKind::HostCpu:
      break;
  }
  return "host-cpu";
}

nlohmann::json backends_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& d : backend_descriptors()) {
    nlohmann::json options = nlohmann::json::array();
    for (const BackendOptionSpec& o : d->options)
      options.push_back({{"key", o.key},
                         {"flags", o.flags},
                         {"help", o.help},
                         {"default", o.default_value},
                         {"flag", o.flag},
                         {"hidden", o.hidden}});
    list.push_back({{"name", d->name},
                    {"summary", d->summary},
                    {"built", static_cast<bool>(d->make)},
                    {"not_built", d->not_built},
                    {"compiled_models", compiled_text(d->traits.compiled)},
                    {"device", device_text(d->traits.device)},
                    {"models_time", d->traits.models_time},
                    {"needs_target", d->traits.needs_target},
                    {"computes_outputs", d->traits.computes_outputs},
                    {"has_device_probe", static_cast<bool>(d->probe)},
                    {"options", options}});
  }
  return {{"backends", list}};
}

int run_backends(bool json) {
  if (json) {
    print_json(backends_json());
    return 0;
  }
  for (const auto& d : backend_descriptors())
    std::cout << d->name << (d->make ? "" : " (not built here)") << ": " << d->summary << "\n";
  return 0;
}

}  // namespace

Command add_backends_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* sub = app.add_subcommand("backends", "List the backends, their traits and options");
  sub->add_flag("--json", *json, "One JSON object on stdout");
  return {sub, [json] { return run_backends(*json); }};
}

}  // namespace dpushard::cli
