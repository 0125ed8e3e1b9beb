#include "figures.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/base/error.hpp"
#include "dpushard/plan/strategy_table.hpp"

extern char** environ;

namespace dpushard::report {
namespace {

using nlohmann::json;

std::string config_label(int nodes, const std::string& strategy) {
  if (nodes == 1) return "1 node";
  return std::to_string(nodes) + " nodes, " + strategy +
         (strategy_is_baseline(strategy) ? " (data parallel)" : "");
}

json series_for(const FamilyAnalysis& fa, int nodes, const std::string& strategy,
                const std::string& label, double (*value)(const Row&), bool dashed) {
  json x = json::array(), y = json::array();
  for (const auto& size : fa.sizes) {
    const Row* r = fa.find(size.label, nodes, strategy);
    if (!r || r->m.failed) continue;
    const double v = value(*r);
    if (v < 0) continue;  // not available
    x.push_back(size.params / 1e6);
    y.push_back(v);
  }
  return {{"label", label},
          {"x", x},
          {"y", y},
          {"color_key", nodes == 1 ? std::string("baseline") : strategy},
          {"color", nodes == 1 ? std::string() : strategy_color(strategy)},
          {"marker_key", std::to_string(nodes)},
          {"dashed", dashed}};
}

json figure(const FamilyAnalysis& fa, const Analysis& a, const std::string& kind,
            const std::string& what, const std::string& ylabel) {
  return {{"file", figure_file(fa.family, kind)},
          {"title", fa.family + ": " + what + " [" + (a.modeled ? "modeled" : "measured") + "]"},
          {"xlabel", "model size (million parameters)"},
          {"ylabel", ylabel},
          {"xlog", true},
          {"ylog", false},
          {"note", std::string(a.modeled ? "Modeled" : "Measured") + " (" + a.timing_label +
                       "; link " + a.link_label + ")"},
          {"series", json::array()}};
}

}  // namespace

std::string figure_file(const std::string& family, const std::string& kind) {
  return "plots/" + family + "_" + kind + ".png";
}

json figure_specs(const Analysis& a) {
  json figures = json::array();
  for (const auto& fa : a.families) {
    json speedup = figure(fa, a, "speedup", "throughput speedup over one node", "speedup (x)");
    json efficiency = figure(fa, a, "efficiency", "parallel efficiency", "speedup / nodes");
    json latency =
        figure(fa, a, "latency", "latency per frame (p50 solid, p99 dashed)", "latency (ms)");
    json bytes = figure(fa, a, "bytes", "bytes on the network per frame", "MB per frame");
    speedup["hline"] = 1.0;
    efficiency["hline"] = 1.0;
    latency["ylog"] = true;

    latency["series"].push_back(series_for(
        fa, 1, "", "1 node p50", [](const Row& r) { return r.m.p50_ms > 0 ? r.m.p50_ms : -1; },
        false));
    latency["series"].push_back(series_for(
        fa, 1, "", "1 node p99", [](const Row& r) { return r.m.p99_ms > 0 ? r.m.p99_ms : -1; },
        true));
    for (int n : fa.node_counts) {
      if (n == 1) continue;
      for (const auto& s : fa.strategies) {
        const std::string label = config_label(n, s);
        const bool baseline = strategy_is_baseline(s);
        speedup["series"].push_back(series_for(
            fa, n, s, label, [](const Row& r) { return r.has_baseline ? r.speedup : -1; },
            baseline));
        efficiency["series"].push_back(series_for(
            fa, n, s, label, [](const Row& r) { return r.has_baseline ? r.efficiency : -1; },
            baseline));
        latency["series"].push_back(series_for(
            fa, n, s, label + " p50", [](const Row& r) { return r.m.p50_ms > 0 ? r.m.p50_ms : -1; },
            false));
        latency["series"].push_back(series_for(
            fa, n, s, label + " p99", [](const Row& r) { return r.m.p99_ms > 0 ? r.m.p99_ms : -1; },
            true));
        bytes["series"].push_back(series_for(
            fa, n, s, label, [](const Row& r) { return r.m.bytes_per_frame / 1e6; }, baseline));
      }
    }
    for (json* f : {&speedup, &efficiency, &latency, &bytes}) figures.push_back(std::move(*f));
  }
  return {{"figures", figures}};
}

void render_figures(const json& specs, const std::filesystem::path& results_dir,
                    const std::string& python) {
  const auto spec_path = results_dir / "plots" / "figures.json";
  std::error_code ec;
  std::filesystem::create_directories(spec_path.parent_path(), ec);
  if (ec) throw Error(spec_path.parent_path().string() + ": cannot create: " + ec.message());
  write_file_atomically(spec_path, specs.dump(1) + "\n");

  std::vector<std::string> args = {python, "-c", kPlotScript, spec_path.string(),
                                   results_dir.string()};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ);
  if (spawned != 0) throw Error("plots: cannot run '" + python + "': " + std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error("plots: waiting for '" + python + "' failed");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("plots: '" + python + "' failed (" +
                (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                   : std::string("killed by a signal")) +
                "); is matplotlib installed for it (Debian: python3-matplotlib)?");
}

}  // namespace dpushard::report
