#include "dpushard/split/split.hpp"

namespace dpushard {

std::string_view objective_name(Objective objective) {
  return objective == Objective::Latency ? "latency" : "throughput";
}

Objective parse_objective(std::string_view text) {
  if (text == "latency") return Objective::Latency;
  if (text == "throughput") return Objective::Throughput;
  throw Error("unknown objective '" + std::string(text) + "' (known: latency, throughput)");
}

}  // namespace dpushard
