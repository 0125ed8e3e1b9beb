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

// A break-even's answer without its speedup: "≤ 2M", "10M", "> 50M", "not possible", "—",
// "no gain" (a strategy that cannot beat one node here: BreakEven::Kind::NoGain), and where
// noise decides, the range it lies in: "≈ 2M–5M (noise)", "≈ ≤ 1M–5M (noise)",
// "≈ 50M–> 200M (noise)", "≈ ≥ 200M (noise)" (only the largest size straddles), "≈ any size
// (noise)" (every size does); a firm answer is a range of one size.
std::string break_even_answer(const BreakEven& be);
// One end of a break-even's range: the lower (`reach`, "≤ 1M" at the smallest size) or the
// upper (where the break-even surely is: "5M", "≤ 1M", "> 200M"); both the answer when firm.
std::string range_end_text(const BreakEven& be, bool upper);
// The table's cell: the answer with the speedup at a firm size ("10M (1.20×)", "> 50M (0.90×
// at 50M)"); a range without one.
std::string break_even_cell(const BreakEven& be);

}  // namespace dpushard::report
