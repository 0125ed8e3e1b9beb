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

std::string PlanCandidate::label() const {
  if (strategy != "hybrid" || replicas < 1 || inner_strategy.empty()) return strategy;
  return strategy + " " + std::to_string(replicas) + "x " + inner_strategy;
}

std::string_view objective_name(Objective objective) {
  return objective == Objective::Latency ? "latency" : "throughput";
}

Objective parse_objective(std::string_view text) {
  if (text == "latency") return Objective::Latency;
  if (text == "throughput") return Objective::Throughput;
  throw Error("unknown objective '" + std::string(text) + "' (known: latency, throughput)");
}

std::int64_t PlanTensor::element_count() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

const PlanFragment& Plan::fragment(std::string_view name) const {
  for (const auto& f : fragments)
    if (f.name == name) return f;
  throw Error("plan: no fragment named '" + std::string(name) + "'");
}

}  // namespace dpushard
