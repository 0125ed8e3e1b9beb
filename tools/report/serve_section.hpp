#pragma once
// The Server scenario through `dpushard serve` beside the in-process orchestrator's
// (docs/benchmarking.md, "Server through serve"): the sweep role's serve step
// (serve-<family>-<size>.json) against the suite's Server row of the same configuration.

#include <string>
#include <vector>

#include "analysis.hpp"
#include "results.hpp"

namespace dpushard::report {

// "#### Server through `dpushard serve`" for one family; empty when no search served it.
std::string render_serve_section(const FamilyAnalysis& fa, const std::vector<ServeSearch>& serve);

}  // namespace dpushard::report
