#pragma once
// The report's figures: what each plot shows is decided here (series, axes, captions) and
// written as a JSON spec; tools/report/plot.py (embedded in the binary) draws the PNGs
// with matplotlib. Every figure's title says whether its times are modeled or measured.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis.hpp"

namespace dpushard::report {

// {"figures": [{"file", "title", "xlabel", "ylabel", "xlog", "ylog", "hline", "note",
//               "series": [{"label", "x", "y", "color_key", "marker_key", "dashed"}]}]}
// Files are named plots/<family>_<kind>.png, kind in speedup, efficiency, latency, bytes.
nlohmann::json figure_specs(const Analysis& analysis);

// The figure files of one family, relative to the results folder, in report order.
std::string figure_file(const std::string& family, const std::string& kind);

// Runs `python` on the embedded plot script with the spec, writing the PNGs under
// `results_dir`. Throws dpushard::Error naming the interpreter when it cannot run or fails.
void render_figures(const nlohmann::json& specs, const std::filesystem::path& results_dir,
                    const std::string& python);

// The plotting script's source (tools/report/plot.py, embedded at build time).
extern const char* const kPlotScript;

}  // namespace dpushard::report
