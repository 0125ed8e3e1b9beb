// The compiled fragments of a plan on the nodes with a DPU.

#include "compiled_fragments.hpp"

#include <algorithm>

#include "dpushard/base/sha256.hpp"
#include "dpushard/net/client.hpp"
#include "dpushard/plan/fragment_io.hpp"

namespace dpushard::cluster {

std::vector<std::optional<WireFragment>> read_compiled_fragments(
    const Plan& plan, const std::filesystem::path& plan_dir) {
  std::vector<std::optional<WireFragment>> out;
  for (const PlanFragment& fragment : plan.fragments) {
    if (!fragment.compiled) {
      out.emplace_back();
      continue;
    }
    const std::filesystem::path path = plan_dir / fragment.compiled->file;
    const std::string what = "plan fragment '" + fragment.name + "': compiled file";
    std::string bytes = read_recorded_file(path, fragment.compiled->sha256, what);
    WireFragment wire;
    wire.sha = sha256(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
    wire.bytes = std::make_shared<const std::string>(std::move(bytes));
    out.push_back(std::move(wire));
  }
  return out;
}

bool runs_compiled(const std::string& backend, const DeviceInfo& device) {
  if (device.dpu_fingerprint != 0) return true;
  const auto descriptor = find_backend(backend);
  return descriptor && descriptor->traits.compiled == CompiledModels::Required;
}

void use_compiled_fragments(const Plan& plan, JobLayout& layout, int node,
                            const std::string& node_name, const std::string& backend,
                            const DeviceInfo& device) {
  if (!runs_compiled(backend, device)) return;
  auto it = layout.assignments.find(node);
  if (it == layout.assignments.end()) return;
  for (net::FragmentAssignment& assignment : it->second) {
    const auto k = static_cast<std::size_t>(
        std::find_if(plan.fragments.begin(), plan.fragments.end(),
                     [&](const PlanFragment& f) { return f.name == assignment.name; }) -
        plan.fragments.begin());
    const PlanFragment& fragment = plan.fragments.at(k);
    if (!fragment.compiled || k >= layout.compiled.size() || !layout.compiled[k])
      throw Error("node '" + node_name + "' runs backend '" + backend + "': plan fragment '" +
                  fragment.name +
                  "' has no compiled file (compile it for the node's DPU and record it: "
                  "docs/plan.md, compiled)");
    if (device.dpu_fingerprint == 0)
      throw Error("node '" + node_name + "' runs backend '" + backend +
                  "' but reports no DPU fingerprint: cannot check compiled fragment '" +
                  fragment.name + "' (built for DPU " +
                  fingerprint_text(fragment.compiled->dpu_fingerprint) + ")");
    if (device.dpu_fingerprint != fragment.compiled->dpu_fingerprint)
      throw Error("node '" + node_name + "': compiled fragment '" + fragment.name +
                  "' was built for DPU " + fingerprint_text(fragment.compiled->dpu_fingerprint) +
                  ", the node's DPU is " + fingerprint_text(device.dpu_fingerprint) +
                  ": recompile it with the node's arch.json");
    const WireFragment& wire = *layout.compiled[k];
    assignment.sha = wire.sha;
    const bool known = std::any_of(layout.fragments.begin(), layout.fragments.end(),
                                   [&](const WireFragment& w) { return w.sha == wire.sha; });
    if (!known) layout.fragments.push_back(wire);
  }
}

}  // namespace dpushard::cluster
