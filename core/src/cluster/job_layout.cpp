// A plan laid out as one job: wire fragments, instances and routing tables.

#include "job_layout.hpp"

#include "compiled_fragments.hpp"

#include "dpushard/base/sha256.hpp"
#include "dpushard/plan/fragment_io.hpp"
#include "dpushard/plan/plan_check.hpp"
#include "dpushard/xmodel/xmodel.hpp"

namespace dpushard::cluster {

namespace {

net::Digest sha_of(const std::string& bytes) {
  return sha256(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

std::size_t index_of(const std::vector<PlanTensor>& tensors, const std::string& name,
                     const std::string& what) {
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return i;
  throw Error(what + ": no tensor '" + name + "'");
}

// The fragment as shipped, and the plan output name of each of its graph outputs. The file
// is read and checked once (read_fragment: its recorded sha256, a model a worker accepts,
// the plan's inputs and outputs) and its bytes are shipped as written, unless an output is
// unfixed (a --no-output-fix plan): then the fragment is sent in its wire form, as the
// local runner runs it, so only int8 values travel.
std::pair<WireFragment, std::vector<std::string>> wire_form(const PlanFragment& fragment,
                                                            const std::filesystem::path& plan_dir) {
  LoadedFragment loaded = read_fragment(fragment, plan_dir);
  std::string bytes = std::move(loaded.bytes);
  if (wire_fragment(loaded.graph, fragment)) bytes = serialize_xmodel(loaded.graph);
  std::vector<std::string> outputs;
  for (const Op* op : loaded.graph.outputs())
    outputs.push_back(plan_output_name(loaded.graph, *op));
  WireFragment wire;
  wire.sha = sha_of(bytes);
  wire.bytes = std::make_shared<const std::string>(std::move(bytes));
  return {std::move(wire), std::move(outputs)};
}

}  // namespace

JobLayout make_job_layout(const Plan& plan, const std::filesystem::path& plan_dir,
                          const std::vector<std::string>& node_names) {
  check_plan(plan);
  if (node_names.size() < static_cast<std::size_t>(plan.nodes))
    throw Error("the plan needs " + std::to_string(plan.nodes) + " nodes, the cluster has " +
                std::to_string(node_names.size()));
  JobLayout layout;
  std::map<std::string, std::size_t> fragment_index;
  std::vector<std::vector<std::string>> graph_outputs;
  // One slot per instance, numbered in plan order.
  std::vector<std::vector<net::Target>> instances;
  std::uint32_t next_slot = 0;
  for (std::size_t k = 0; k < plan.fragments.size(); ++k) {
    const PlanFragment& fragment = plan.fragments[k];
    fragment_index[fragment.name] = k;
    auto [wire, outputs] = wire_form(fragment, plan_dir);
    layout.fragments.push_back(std::move(wire));
    graph_outputs.push_back(std::move(outputs));
    std::vector<net::Target> replicas;
    for (int node : fragment.nodes)
      replicas.push_back(net::Target{node_names[static_cast<std::size_t>(node)], next_slot++});
    instances.push_back(std::move(replicas));
  }

  // The destination of an edge: a consumer fragment's input (all its instances) or a
  // model output at the orchestrator.
  auto destination_of = [&](const PlanEdge& edge) {
    net::Destination d;
    if (edge.to == "model") {
      d.replicas = {net::Target{}};
      d.index =
          static_cast<std::uint32_t>(index_of(plan.model_outputs, edge.input, "model outputs"));
      return d;
    }
    const std::size_t k = fragment_index.at(edge.to);
    d.replicas = instances[k];
    d.index = static_cast<std::uint32_t>(
        index_of(plan.fragments[k].inputs, edge.input, "fragment '" + edge.to + "' inputs"));
    return d;
  };

  for (const PlanEdge& edge : plan.edges) {
    if (edge.from != "model") continue;
    if (edge.to == "model")
      throw Error("edge model:" + edge.output +
                  " -> model: a model input that is also an "
                  "output cannot run on a cluster");
    InputRoute route{index_of(plan.model_inputs, edge.output, "model inputs"), destination_of(edge),
                     replica_cycle(plan.frame_share)};
    if (!route.cycle.empty() && plan.frame_share.size() != route.destination.replicas.size())
      throw Error("frame_share: " + std::to_string(plan.frame_share.size()) + " shares for " +
                  std::to_string(route.destination.replicas.size()) + " replicas of '" + edge.to +
                  "'");
    layout.inputs.push_back(std::move(route));
  }

  for (std::size_t k = 0; k < plan.fragments.size(); ++k) {
    const PlanFragment& fragment = plan.fragments[k];
    std::vector<std::vector<net::Destination>> routing;
    for (const std::string& output : graph_outputs[k]) {
      std::vector<net::Destination> destinations;
      for (const PlanEdge& edge : plan.edges)
        if (edge.from == fragment.name && edge.output == output)
          destinations.push_back(destination_of(edge));
      if (destinations.empty())
        throw Error("plan fragment '" + fragment.name + "': output '" + output +
                    "' goes nowhere (no edge)");
      routing.push_back(std::move(destinations));
    }
    for (std::size_t r = 0; r < fragment.nodes.size(); ++r) {
      const int node = fragment.nodes[r];
      layout.assignments[node].push_back(net::FragmentAssignment{
          instances[k][r].slot, layout.fragments[k].sha, fragment.name, routing});
      layout.fragment_names[node].push_back(fragment.name);
    }
  }
  layout.compiled = read_compiled_fragments(plan, plan_dir);
  return layout;
}

}  // namespace dpushard::cluster
