#include "dpushard/split.hpp"

namespace dpushard {

std::string_view strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::Experts:
      return "experts";
    case Strategy::Pipeline:
      return "pipeline";
    case Strategy::Replicate:
      return "replicate";
    case Strategy::Hybrid:
      return "hybrid";
    case Strategy::Auto:
      break;
  }
  return "auto";
}

Strategy parse_strategy(std::string_view text) {
  for (Strategy s : {Strategy::Experts, Strategy::Pipeline, Strategy::Replicate, Strategy::Hybrid,
                     Strategy::Auto})
    if (text == strategy_name(s)) return s;
  throw Error("unknown strategy '" + std::string(text) +
              "' (known: experts, pipeline, replicate, hybrid, auto)");
}

std::string_view objective_name(Objective objective) {
  return objective == Objective::Latency ? "latency" : "throughput";
}

Objective parse_objective(std::string_view text) {
  if (text == "latency") return Objective::Latency;
  if (text == "throughput") return Objective::Throughput;
  throw Error("unknown objective '" + std::string(text) + "' (known: latency, throughput)");
}

}  // namespace dpushard
