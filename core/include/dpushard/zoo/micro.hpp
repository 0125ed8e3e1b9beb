#pragma once
// The micro-model suite: tiny `_int` graphs, each a fragment that isolates one pattern the
// DPU compiler treats specially at a fragment boundary (an op configuration inside or
// beyond the DPU's limits, an output with or without its fix, ...). The oracle lists the
// outcome expected for each; the characterization playbook compiles them on a Vitis AI
// host to confirm or correct it.

#include <string>
#include <string_view>
#include <vector>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

struct MicroModelInfo {
  std::string name;         // file stem: <name>_int.xmodel
  std::string description;  // one line: the pattern it isolates
};

// Every micro-model, in a stable order.
const std::vector<MicroModelInfo>& micro_models();
// Builds one (deterministic weights); throws dpushard::Error naming an unknown model.
Graph make_micro_model(std::string_view name);

}  // namespace dpushard
