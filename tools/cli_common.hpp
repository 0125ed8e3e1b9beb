#pragma once
// Helpers shared by the subcommands: JSON on stdout, human text on stderr.

#include <nlohmann/json.hpp>
#include <string>

#include "dpushard/graph/preprocessing.hpp"
#include "dpushard/graph/tensor.hpp"

namespace dpushard::cli {

// Prints one JSON object on stdout (the --json contract).
void print_json(const nlohmann::json& object);

// Formats 123456789 as "123.5M" for human output.
std::string human_count(long long value);

// A tensor as `exec` and `run` report it: name, shape, fix_point, sha256 and, for a
// classifier output (a single row of at least 2 values) when asked, its top-5 classes.
nlohmann::json tensor_json(const QTensor& tensor, bool with_top5);

// A preprocessing block as `import` and `inspect` print it: {mean, std, resize, crop: [h, w]}.
nlohmann::json preprocessing_json(const Preprocessing& p);

}  // namespace dpushard::cli
