#pragma once
// Every number option of the command line refuses what its type cannot hold exactly:
// CLI11 reads `nan` and `inf` as doubles (and a range check lets NaN through, since every
// comparison with it is false) and clamps 18446744073709551616 to 2^64-1 without a word.

#include <CLI/CLI.hpp>

namespace dpushard::cli {

// Adds the check to every INT, UINT and FLOAT option of `app` and of its subcommands.
void guard_number_options(CLI::App& app);

}  // namespace dpushard::cli
