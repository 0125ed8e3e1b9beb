#pragma once
// The report's section "Against the published KV260 cluster result": one row per figure of
// the published result that dpushard exists to reproduce and beat, beside dpushard's own
// figure on the same metric and scenario from this run, and the reason for a difference
// where the measurements name one. The published figures are for comparison only: nothing
// in dpushard is fitted to them.

#include <optional>
#include <string>

#include "analysis.hpp"
#include "slurm_section.hpp"

namespace dpushard::report {

std::string render_published_section(const Analysis& a, const std::optional<SlurmOverhead>& slurm);

}  // namespace dpushard::report
