#pragma once
// report.md: the run (environment, settings), the break-even tables, and per family the
// figures and the full table of measurements. Every figure's caption says whether its
// times were modeled or measured.

#include <string>

#include "analysis.hpp"
#include "results.hpp"

namespace dpushard::report {

struct MarkdownOptions {
  bool figures = true;       // the PNGs exist and are linked
  std::string figures_note;  // why there are none, when figures is false
};

std::string render_markdown(const RunResults& results, const Analysis& analysis,
                            const MarkdownOptions& options);

// Cell texts, exposed for tests: "≤ 2M", "10M", "> 50M", "—".
std::string break_even_cell(const BreakEven& be);

}  // namespace dpushard::report
