// dpushard zoo cnn|convvit: generate a model of a parametric family and write it as an
// `_int` xmodel. Every `zoo` subcommand is a Command in the list built below: the
// families share one option set; `micro` (the micro-model suite, cmd_zoo_micro.cpp)
// brings its own.

#include <array>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/graph/cost.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/zoo.hpp"

namespace dpushard::cli {
namespace {

using FamilyMaker = Graph (*)(const ZooSpec&);

struct FamilyOptions {
  std::string params;
  int experts = 3;
  std::string input = "224x224x3";
  std::uint64_t seed = 1;
  std::string join = "concat";
  int classes = 1000;
  std::string output;
  bool json = false;
  bool no_weights = false;
  std::string attention = "gated";  // convvit only
};

struct Family {
  std::string name;
  FamilyMaker make = nullptr;
  std::shared_ptr<FamilyOptions> options;
};

ZooSpec spec_from(const FamilyOptions& o) {
  ZooSpec spec;
  try {
    spec.params = parse_count(o.params);
  } catch (const Error& e) {
    throw Error(std::string("--params: ") + e.what());
  }
  try {
    spec.input = parse_input_shape(o.input);
  } catch (const Error& e) {
    throw Error(std::string("--input: ") + e.what());
  }
  spec.experts = o.experts;
  spec.seed = o.seed;
  spec.join = o.join == "sum" ? ZooJoin::Sum : ZooJoin::Concat;
  spec.classes = o.classes;
  spec.weights = !o.no_weights;
  spec.attention = parse_convvit_attention(o.attention);
  return spec;
}

std::string input_text(const std::array<std::int64_t, 3>& input) {
  return std::to_string(input[0]) + "x" + std::to_string(input[1]) + "x" + std::to_string(input[2]);
}

int run_family(const Family& family) {
  const FamilyOptions& o = *family.options;
  const ZooSpec spec = spec_from(o);
  const auto start = std::chrono::steady_clock::now();
  const Graph graph = family.make(spec);
  write_xmodel(graph, o.output);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const GraphCost cost = graph_cost(graph);

  if (o.json) {
    nlohmann::json summary = {{"file", o.output},
                              {"family", family.name},
                              {"params", cost.params},
                              {"target_params", spec.params},
                              {"macs", cost.macs},
                              {"experts", spec.experts},
                              {"input", input_text(spec.input)},
                              {"seed", spec.seed},
                              {"join", o.join},
                              {"classes", spec.classes},
                              {"weights", spec.weights},
                              {"seconds", seconds}};
    if (family.name == "convvit") summary["attention"] = o.attention;
    print_json(summary);
  } else {
    std::cerr << "zoo: wrote " << o.output << ": " << family.name << ", "
              << human_count(cost.params) << " params (target " << human_count(spec.params) << "), "
              << human_count(cost.macs) << " MACs, "
              << (family.name == "convvit" ? o.attention + " attention, " : "") << spec.experts
              << " experts (" << o.join << "), input " << input_text(spec.input) << ", "
              << spec.classes << " classes, seed " << spec.seed
              << (spec.weights ? "" : ", NO weights (shapes only)") << ", " << graph.size()
              << " ops in " << static_cast<int>(seconds * 1000.0) << " ms\n";
  }
  return 0;
}

Command add_family_command(CLI::App& zoo, std::string name, std::string description,
                           FamilyMaker make, bool has_attention = false) {
  Family family{std::move(name), make, std::make_shared<FamilyOptions>()};
  FamilyOptions& o = *family.options;
  CLI::App* sub = zoo.add_subcommand(family.name, std::move(description));
  sub->add_option("--params", o.params, "Target parameter count: 100M, 2.5M, 750K, 1G, 12345")
      ->required();
  sub->add_option("--experts", o.experts, "Independent expert branches")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--input", o.input, "Input HxWxC")->capture_default_str();
  sub->add_option("--seed", o.seed, "Seed of the int8 weights")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--join", o.join, "How the experts are joined")
      ->capture_default_str()
      ->check(CLI::IsMember({"concat", "sum"}));
  sub->add_option("--classes", o.classes, "Classifier outputs")
      ->capture_default_str()
      ->check(CLI::Range(1, 100'000));
  if (has_attention)
    sub->add_option("--attention", o.attention,
                    "Token mixer: gated (DPU ops only: gated global context, hard-swish MLP, "
                    "folded norms) or softmax (softmax attention, layernorm and GELU, which "
                    "run on the Cortex-A53)")
        ->capture_default_str()
        ->check(CLI::IsMember({"gated", "softmax"}));
  sub->add_option("-o,--output", o.output, "The xmodel to write")->required();
  sub->add_flag("--no-weights", o.no_weights,
                "Write the consts' shapes but not their values: a model of any size (beyond "
                "500M) to split, predict and inspect, refused by exec, run and sim --numerics");
  sub->add_flag("--json", o.json, "Print the summary as one JSON object on stdout");
  return {sub, [family]() { return run_family(family); }};
}

}  // namespace

Command add_zoo_command(CLI::App& app) {
  CLI::App* zoo =
      app.add_subcommand("zoo", "Generate models: CNN and ConvViT families, micro-models");
  zoo->require_subcommand(1);
  auto subcommands = std::make_shared<std::vector<Command>>();
  subcommands->push_back(add_family_command(
      *zoo, "cnn", "CNN: conv stem, residual conv experts, join, conv + pool + classifier",
      &make_cnn));
  subcommands->push_back(add_family_command(
      *zoo, "convvit", "ConvViT: conv patch stem, transformer experts, join, pool + classifier",
      &make_convvit, /*has_attention=*/true));
  subcommands->push_back(add_zoo_micro_command(*zoo));  // cmd_zoo_micro.cpp
  return {zoo, [subcommands]() -> int {
            for (const Command& sub : *subcommands)
              if (sub.app->parsed()) return sub.run();
            throw Error("zoo: choose a subcommand");
          }};
}

}  // namespace dpushard::cli
