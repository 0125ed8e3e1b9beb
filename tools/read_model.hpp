#pragma once
// Reading a model the way every command does.

#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard::cli {

// Reads the xmodel at `path` and runs the one check every command applies on load
// (validate_loaded); an error names the file, then the op.
Graph read_model(const std::string& path);

}  // namespace dpushard::cli
