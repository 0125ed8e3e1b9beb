#pragma once
// Reading and writing xmodel files (XIR's protobuf serial_v2 layout) without any Xilinx library.

#include <filesystem>
#include <string>

#include "dpushard/graph/graph.hpp"

namespace dpushard {

// Reads an `_int` or compiled xmodel. A missing, truncated, damaged or non-xmodel file
// throws dpushard::Error with one line naming the file and what is wrong.
Graph read_xmodel(const std::filesystem::path& path);
Graph parse_xmodel(const std::string& bytes, const std::string& origin);

// Writes `graph` atomically (temporary file in the same folder, then rename): a reader
// never sees a half-written file. Throws dpushard::Error naming the file on failure.
void write_xmodel(const Graph& graph, const std::filesystem::path& path);
std::string serialize_xmodel(const Graph& graph);

}  // namespace dpushard
