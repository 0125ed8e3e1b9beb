// dpushard inspect FILE.xmodel [--json]: what a model file holds. Its size (params, MACs,
// int8 bytes), op counts, inputs and outputs with their fix points, and for compiled files
// the subgraphs the compiler made (USER / DPU / CPU) with the DPU workload.
//
// The summary is this command's result, so it goes to stdout in both forms.

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/graph/cost.hpp"
#include "dpushard/graph/graph.hpp"
#include "dpushard/graph/preprocessing.hpp"
#include "dpushard/graph/shape.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "read_model.hpp"

namespace dpushard::cli {
namespace {

struct InspectOptions {
  std::string file;
  bool json = false;
};

struct TensorSummary {
  std::string name;
  std::vector<std::int64_t> shape;
  std::optional<int> fix_point;
};

struct SubgraphSummary {
  std::string name;
  std::string device;
  std::size_t children = 0;
  std::optional<std::int64_t> workload;  // operations per frame, as the compiler counted them
};

// An `_int` model's input is a float `data` op; its int8 form (and so its fix point) is
// the `fix` op that consumes it. Compiled `data-fix` ops carry the fix point themselves.
std::optional<int> input_fix_point(const Graph& graph, const Op& input) {
  if (auto fp = fix_point_of(graph, input.name)) return fp;
  for (const Op* consumer : graph.consumers(input.name))
    if (consumer->type == "fix") return fix_point_of(graph, consumer->name);
  return std::nullopt;
}

std::vector<TensorSummary> inputs_of(const Graph& graph) {
  std::vector<TensorSummary> out;
  for (const Op* op : graph.inputs())
    out.push_back({op->name, op->output.shape, input_fix_point(graph, *op)});
  return out;
}

std::vector<TensorSummary> outputs_of(const Graph& graph) {
  std::vector<TensorSummary> out;
  for (const Op* op : graph.outputs())
    out.push_back({op->name, op->output.shape, fix_point_of(graph, op->name)});
  return out;
}

std::optional<std::int64_t> workload_of(const Subgraph& subgraph) {
  if (subgraph.attrs.find("workload") == subgraph.attrs.end()) return std::nullopt;
  return int_attr(subgraph.attrs, "workload", 0);
}

// The root's children: one per device region the compiler cut the graph into.
std::vector<SubgraphSummary> subgraphs_of(const Graph& graph) {
  std::vector<SubgraphSummary> out;
  if (!graph.root()) return out;
  for (const Subgraph& child : graph.root()->children)
    out.push_back({child.name, child.device(), child.children.size(), workload_of(child)});
  return out;
}

std::optional<std::int64_t> dpu_workload(const std::vector<SubgraphSummary>& subgraphs) {
  std::optional<std::int64_t> total;
  for (const auto& s : subgraphs)
    if (s.device == "DPU" && s.workload) total = total.value_or(0) + *s.workload;
  return total;
}

nlohmann::json tensor_summary_json(const TensorSummary& t) {
  nlohmann::json fix_point = nullptr;
  if (t.fix_point) fix_point = *t.fix_point;
  return {{"name", t.name}, {"shape", t.shape}, {"fix_point", fix_point}};
}

nlohmann::json summary_json(const std::string& file, const Graph& graph) {
  const GraphCost cost = graph_cost(graph);
  const bool compiled = is_compiled(graph);
  nlohmann::json out = {{"file", file},
                        {"name", graph.name()},
                        {"kind", compiled ? "compiled" : "int"},
                        {"op_count", graph.size()},
                        {"params", cost.params},
                        {"macs", cost.macs},
                        {"weight_bytes", cost.weight_bytes},
                        {"activation_bytes", cost.activation_bytes},
                        {"ops", cost.ops_by_type},
                        {"inputs", nlohmann::json::array()},
                        {"outputs", nlohmann::json::array()}};
  for (const auto& t : inputs_of(graph)) out["inputs"].push_back(tensor_summary_json(t));
  for (const auto& t : outputs_of(graph)) out["outputs"].push_back(tensor_summary_json(t));
  const std::optional<Preprocessing> preprocessing = recorded_preprocessing(graph);
  out["preprocessing"] = preprocessing ? preprocessing_json(*preprocessing) : nullptr;
  if (compiled) {
    const auto subgraphs = subgraphs_of(graph);
    out["subgraphs"] = nlohmann::json::array();
    for (const auto& s : subgraphs) {
      nlohmann::json entry = {{"name", s.name}, {"device", s.device}, {"children", s.children}};
      if (s.workload) entry["workload"] = *s.workload;
      out["subgraphs"].push_back(std::move(entry));
    }
    if (auto workload = dpu_workload(subgraphs)) out["workload"] = *workload;
  }
  return out;
}

std::string tensor_text(const TensorSummary& t) {
  return t.name + " " + shape_text(t.shape) +
         (t.fix_point ? " fix_point " + std::to_string(*t.fix_point) : " float");
}

void print_human(std::ostream& out, const std::string& file, const Graph& graph) {
  const GraphCost cost = graph_cost(graph);
  const bool compiled = is_compiled(graph);
  out << graph.name() << " (" << (compiled ? "compiled" : "_int, not compiled") << ")  " << file
      << "\n";
  out << "  params       " << human_count(cost.params) << " (" << cost.params << ")\n";
  out << "  MACs         " << human_count(cost.macs) << " per frame\n";
  out << "  int8 bytes   " << human_count(cost.weight_bytes) << " weights, "
      << human_count(cost.activation_bytes) << " activations\n";
  out << "  ops          " << graph.size() << ":";
  const char* separator = " ";
  for (const auto& [type, count] : cost.ops_by_type) {
    out << separator << type << " " << count;
    separator = ", ";
  }
  out << "\n";
  for (const auto& t : inputs_of(graph)) out << "  input        " << tensor_text(t) << "\n";
  for (const auto& t : outputs_of(graph)) out << "  output       " << tensor_text(t) << "\n";
  if (const auto preprocessing = recorded_preprocessing(graph))
    out << "  preprocess   " << preprocessing_text(*preprocessing)
        << " (images: resize shorter side, centre crop, /255, mean/std, RGB)\n";
  if (!compiled) return;
  for (const auto& s : subgraphs_of(graph)) {
    out << "  subgraph     " << (s.device.empty() ? "?" : s.device) << " " << s.name;
    if (s.children > 0) out << ", " << s.children << " children";
    if (s.workload.value_or(0) > 0) out << ", workload " << human_count(*s.workload) << " ops";
    out << "\n";
  }
}

int run_inspect(const InspectOptions& options) {
  const Graph graph = read_model(options.file);
  if (options.json) {
    print_json(summary_json(options.file, graph));
  } else {
    std::ostringstream text;
    print_human(text, options.file, graph);
    std::cout << text.str() << std::flush;
  }
  return 0;
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "Summarise an xmodel: size, ops, inputs and outputs, compiled subgraphs");
  // No existence check here: the reader's error names the file and what is wrong with it.
  sub->add_option("file", options->file, "The .xmodel file (_int or compiled)")->required();
  sub->add_flag("--json", options->json, "Print the summary as one JSON object on stdout");
  return {sub, [options]() -> int { return run_inspect(*options); }};
}

}  // namespace dpushard::cli
