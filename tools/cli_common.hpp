#pragma once
// Helpers shared by the subcommands: JSON on stdout, human text on stderr.

#include <nlohmann/json.hpp>
#include <string>

namespace dpushard::cli {

// Prints one JSON object on stdout (the --json contract).
void print_json(const nlohmann::json& object);

// Formats 123456789 as "123.5M" for human output.
std::string human_count(long long value);

}  // namespace dpushard::cli
