// dpushard zoo micro --list | --all -o DIR [--oracle FILE] [--json]
// The micro-model suite: each isolates one compiler-relevant pattern at a fragment
// boundary; the oracle lists the outcome it expects for each (docs/splitting.md).

#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "dpushard/split/oracle.hpp"
#include "dpushard/xmodel/xmodel.hpp"
#include "dpushard/zoo/micro.hpp"

namespace dpushard::cli {
namespace {

struct MicroOptions {
  bool list = false;
  bool all = false;
  std::string output;
  std::string oracle;
  bool json = false;
};

std::string expected_text(const Oracle& oracle, const std::string& name) {
  const auto v = oracle.expected(name);
  return v ? std::string(verdict_name(*v)) : std::string("(not listed)");
}

int run_micro(const MicroOptions& o) {
  if (o.list == o.all) throw Error("zoo micro: give exactly one of --list and --all");
  if (o.all && o.output.empty()) throw Error("zoo micro --all: -o DIR is required");
  std::unique_ptr<Oracle> loaded;
  if (!o.oracle.empty()) loaded = std::make_unique<Oracle>(Oracle::load(o.oracle));
  const Oracle& oracle = loaded ? *loaded : Oracle::builtin();
  if (o.all) std::filesystem::create_directories(o.output);
  nlohmann::json models = nlohmann::json::array();
  std::ostringstream human;
  for (const auto& m : micro_models()) {
    nlohmann::json j = {{"name", m.name},
                        {"description", m.description},
                        {"expected", expected_text(oracle, m.name)}};
    if (o.all) {
      const Graph g = make_micro_model(m.name);
      const auto path = std::filesystem::path(o.output) / (m.name + "_int.xmodel");
      write_xmodel(g, path);
      j["file"] = path.string();
      j["bytes"] = std::filesystem::file_size(path);
    }
    human << "  " << m.name << std::string(m.name.size() < 22 ? 22 - m.name.size() : 1, ' ')
          << expected_text(oracle, m.name) << "  " << m.description << "\n";
    models.push_back(j);
  }
  if (o.json) {
    print_json({{"oracle", oracle.name()}, {"count", models.size()}, {"models", models}});
  } else {
    std::cerr << micro_models().size() << " micro-models (expected outcome from oracle "
              << oracle.name() << ")" << (o.all ? ", written to " + o.output : std::string())
              << ":\n"
              << human.str();
  }
  return 0;
}

}  // namespace

Command add_zoo_micro_command(CLI::App& zoo) {
  auto options = std::make_shared<MicroOptions>();
  MicroOptions& o = *options;
  CLI::App* sub = zoo.add_subcommand(
      "micro", "The micro-model suite: one compiler-relevant boundary pattern per model");
  sub->add_flag("--list", o.list, "List the micro-models and the oracle's expected outcome");
  sub->add_flag("--all", o.all, "Write every micro-model as DIR/<name>_int.xmodel");
  sub->add_option("-o,--output", o.output, "The folder --all writes to");
  sub->add_option("--oracle", o.oracle, "Oracle YAML for the expected outcomes")
      ->check(CLI::ExistingFile);
  sub->add_flag("--json", o.json, "Print the list as one JSON object on stdout");
  return {sub, [options] { return run_micro(*options); }};
}

}  // namespace dpushard::cli
