// `dpushard report` and its parts on synthetic scaling-suite output: the break-even rule,
// speedup and efficiency against the 1-node baseline, repetitions, failed configurations,
// bad input, and the rendered report.md and PNG figures.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "dpushard/error.hpp"
#include "harness/synthetic_results.hpp"
#include "report/analysis.hpp"
#include "report/markdown.hpp"
#include "report/results.hpp"

namespace dpushard {
namespace {

using nlohmann::json;
using report::BreakEven;
using testing::TempDir;

report::RunResults parse(const json& doc) {
  report::RunResults r;
  report::parse_benchmark_json(doc, "bench_cnn_scaling.json", r);
  return r;
}

const BreakEven& find(const std::vector<BreakEven>& table, int nodes, const std::string& s) {
  for (const auto& be : table)
    if (be.nodes == nodes && be.strategy == s) return be;
  throw std::runtime_error("no break-even for " + s);
}

TEST(ReportAnalysis, BreakEvenIsTheSmallestSizeFromWhichNNodesKeepWinning) {
  const auto a =
      report::analyze(parse(testing::benchmark_json("cnn", testing::cnn_configs(), "sim")));
  ASSERT_EQ(a.families.size(), 1u);
  const auto& t = a.families[0].throughput_break_even;
  ASSERT_EQ(t.size(), 6u);  // 2 and 3 nodes x 3 strategies

  EXPECT_EQ(find(t, 2, "experts").kind, BreakEven::Kind::From);
  EXPECT_EQ(find(t, 2, "experts").size.label, "5M");
  EXPECT_NEAR(find(t, 2, "experts").at, 1.1, 1e-9);
  EXPECT_EQ(find(t, 2, "pipeline").kind, BreakEven::Kind::Never);
  EXPECT_EQ(find(t, 2, "pipeline").size.label, "10M");
  EXPECT_EQ(find(t, 2, "replicate").kind, BreakEven::Kind::Always);
  EXPECT_EQ(find(t, 2, "replicate").size.label, "2M");
  // Winning at 2M but losing at 5M does not count: the break-even is where it stays won.
  EXPECT_EQ(find(t, 3, "experts").kind, BreakEven::Kind::From);
  EXPECT_EQ(find(t, 3, "experts").size.label, "10M");
  EXPECT_EQ(find(t, 3, "pipeline").kind, BreakEven::Kind::Always);

  EXPECT_EQ(report::break_even_cell(find(t, 2, "experts")), "5M (1.10×)");
  EXPECT_EQ(report::break_even_cell(find(t, 2, "pipeline")), "> 10M (0.90× at 10M)");
  EXPECT_EQ(report::break_even_cell(find(t, 2, "replicate")), "≤ 2M (1.90×)");
}

TEST(ReportAnalysis, SpeedupAndEfficiencyAreAgainstTheOneNodeRunOfTheSameModel) {
  const auto a =
      report::analyze(parse(testing::benchmark_json("cnn", testing::cnn_configs(), "sim")));
  const auto& fa = a.families[0];
  EXPECT_EQ(fa.sizes.size(), 3u);
  EXPECT_EQ(fa.sizes.front().label, "2M");
  EXPECT_EQ((fa.node_counts), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ((fa.strategies), (std::vector<std::string>{"experts", "pipeline", "replicate"}));

  const report::Row* r = fa.find("10M", 3, "replicate");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->has_baseline);
  EXPECT_NEAR(r->speedup, 2.9, 1e-9);
  EXPECT_NEAR(r->efficiency, 2.9 / 3, 1e-9);
  EXPECT_NEAR(r->latency_speedup, 2.9, 1e-9);  // the synthetic p50 is 1.5 frame times
  const report::Row* base = fa.find("10M", 1, "anything");
  ASSERT_NE(base, nullptr);
  EXPECT_NEAR(base->speedup, 1.0, 1e-12);
  EXPECT_TRUE(a.modeled);
  EXPECT_NE(a.timing_label.find("KV260 timing model"), std::string::npos);
}

TEST(ReportAnalysis, BreakEvenWithoutMeasurementsIsNoData) {
  const BreakEven be = report::break_even({}, &report::Row::speedup);
  EXPECT_EQ(be.kind, BreakEven::Kind::NoData);
  EXPECT_EQ(report::break_even_cell(be), "—");
}

TEST(ReportResults, RepetitionsAreAveragedThroughTheMeanAggregate) {
  const auto r = parse(testing::benchmark_json("cnn", testing::cnn_configs(), "sim", 3));
  ASSERT_EQ(r.measurements.size(), testing::cnn_configs().size());
  EXPECT_EQ(r.measurements[0].repetitions, 3);
  EXPECT_NEAR(r.measurements[0].fps, 100, 1e-9);
  EXPECT_EQ(r.measurements[0].size, "2M");
  EXPECT_EQ(r.measurements[0].nodes, 1);
  EXPECT_EQ(r.measurements[0].family, "cnn");
}

TEST(ReportResults, IterationsWithoutAggregatesAreAveraged) {
  json doc = testing::benchmark_json("cnn", testing::cnn_configs(), "sim", 3);
  json kept = json::array();
  for (const auto& e : doc["benchmarks"])
    if (e["run_type"] == "iteration") kept.push_back(e);
  doc["benchmarks"] = kept;
  const auto r = parse(doc);
  EXPECT_EQ(r.measurements[0].repetitions, 3);
  EXPECT_NEAR(r.measurements[0].fps, 100, 1e-9);
}

TEST(ReportResults, AFailedConfigurationIsKeptWithItsError) {
  json doc = testing::benchmark_json("cnn", testing::cnn_configs(), "sim");
  doc["benchmarks"][1]["error_occurred"] = true;
  doc["benchmarks"][1]["error_message"] = "node2 (127.0.0.1:7702) closed the connection";
  const auto r = parse(doc);
  const auto a = report::analyze(r);
  ASSERT_EQ(a.failed.size(), 1u);
  EXPECT_EQ(a.failed[0].error, "node2 (127.0.0.1:7702) closed the connection");
  const std::string md = report::render_markdown(r, a, {false, "test"});
  EXPECT_NE(md.find("node2 (127.0.0.1:7702) closed the connection"), std::string::npos);
}

TEST(ReportResults, OtherBenchmarksInTheFileAreIgnored) {
  json doc = testing::benchmark_json("cnn", testing::cnn_configs(), "sim");
  doc["benchmarks"].push_back({{"name", "BM_Transport/1048576"},
                               {"run_name", "BM_Transport/1048576"},
                               {"run_type", "iteration"},
                               {"real_time", 1.0}});
  EXPECT_EQ(parse(doc).measurements.size(), testing::cnn_configs().size());
}

TEST(ReportResults, AMissingCounterNamesTheFileAndBenchmark) {
  json doc = testing::benchmark_json("cnn", testing::cnn_configs(), "sim");
  doc["benchmarks"][0].erase("fps");
  try {
    parse(doc);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bench_cnn_scaling.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cnn/params:2M/nodes:1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'fps'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(ReportResults, ABrokenFileIsNamed) {
  TempDir dir;
  testing::write_json(dir / "bench_cnn_scaling.json",
                      testing::benchmark_json("cnn", testing::cnn_configs(), "sim"));
  {
    std::ofstream out(dir / "bench_convvit_scaling.json");
    out << "{\"context\": {";
  }
  try {
    report::read_results(dir.path());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bench_convvit_scaling.json"), std::string::npos)
        << e.what();
  }
}

TEST(ReportResults, AFolderWithoutMeasurementsIsAnError) {
  TempDir dir;
  testing::write_json(dir / "env.json", {{"run_id", "x"}});
  EXPECT_THROW(report::read_results(dir.path()), Error);
  EXPECT_THROW(report::read_results(dir / "missing"), Error);
}

// --- The command line ------------------------------------------------------------------

struct Cli {
  int exit_code = -1;
  std::string out, err;
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Cli run_cli(const TempDir& scratch, const std::string& args) {
  const auto out = scratch / "cli.out", err = scratch / "cli.err";
  const std::string command = quoted(DPUSHARD_CLI) + " " + args + " >" + quoted(out.string()) +
                              " 2>" + quoted(err.string());
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::read_file(out),
          testing::read_file(err)};
}

void write_run(const TempDir& dir, const std::string& backend) {
  testing::write_json(dir / "bench_cnn_scaling.json",
                      testing::benchmark_json("cnn", testing::cnn_configs(), backend));
  auto convvit = testing::cnn_configs();
  for (auto& c : convvit) c.fps *= 0.5;
  testing::write_json(dir / "bench_convvit_scaling.json",
                      testing::benchmark_json("convvit", convvit, backend));
  testing::write_json(dir / "env.json",
                      {{"run_id", "20251202-120000-local"},
                       {"inventory", "local"},
                       {"backend", backend},
                       {"hosts",
                        {{"controller",
                          {{"role", "head"},
                           {"hostname", "box"},
                           {"cpu", "Test CPU"},
                           {"cores", 2},
                           {"memory_mb", 8192},
                           {"os", "Debian 12"},
                           {"architecture", "x86_64"}}},
                         {"node1", {{"role", "worker"}, {"address", "127.0.0.1:7701"}}}}}});
}

bool is_png(const std::filesystem::path& path) {
  const std::string bytes = testing::read_file(path);
  return bytes.size() > 1000 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

TEST(ReportCli, RendersTheReportWithBreakEvenTablesAndModeledFigures) {
  TempDir dir;
  write_run(dir, "sim");
  const Cli r = run_cli(dir, "report " + quoted(dir.path().string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  const std::string md = testing::read_file(dir / "report.md");
  EXPECT_NE(md.find("# dpushard scaling report: 20251202-120000-local"), std::string::npos);
  EXPECT_NE(md.find("**Timing: modeled.**"), std::string::npos);
  EXPECT_NE(md.find("## Break-even model size"), std::string::npos);
  EXPECT_NE(md.find("| 2 | 5M (1.10×) | > 10M (0.90× at 10M) | ≤ 2M (1.90×) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("replicate (data-parallel baseline)"), std::string::npos);
  EXPECT_NE(md.find("| head node | controller (box): Test CPU, 2 cores"), std::string::npos) << md;
  EXPECT_NE(md.find("![cnn speedup](plots/cnn_speedup.png)"), std::string::npos);
  EXPECT_NE(md.find("*Throughput speedup over one node"), std::string::npos);
  EXPECT_NE(md.find("Modeled (sim backend"), std::string::npos) << md;
  // The busiest node's share of the predicted compute, beside the measured bytes.
  EXPECT_NE(md.find("| busiest node | wire bytes/frame |"), std::string::npos) << md;
  EXPECT_NE(md.find(" | 47 % | 400 kB | "), std::string::npos) << md;

  for (const char* family : {"cnn", "convvit"})
    for (const char* kind : {"speedup", "efficiency", "latency", "bytes"}) {
      const auto png = dir / (std::string("plots/") + family + "_" + kind + ".png");
      EXPECT_TRUE(is_png(png)) << png;
    }
  const std::string spec = testing::read_file(dir / "plots/figures.json");
  EXPECT_NE(spec.find("speedup over one node [modeled]"), std::string::npos);

  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["timing"], "modeled");
  EXPECT_EQ(summary["figures"].size(), 8u);
  ASSERT_EQ(summary["families"].size(), 2u);
  EXPECT_EQ(summary["families"][0]["family"], "cnn");
  EXPECT_EQ(summary["families"][0]["break_even_throughput"][0]["size"], "5M");
}

TEST(ReportCli, MeasuredBackendsAreLabelledMeasured) {
  TempDir dir;
  write_run(dir, "cpu");
  const Cli r = run_cli(dir, "report " + quoted(dir.path().string()) + " --no-plots");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = testing::read_file(dir / "report.md");
  EXPECT_NE(md.find("**Timing: measured.**"), std::string::npos);
  EXPECT_NE(md.find("not a DPU"), std::string::npos);
  EXPECT_EQ(md.find("**Timing: modeled"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "plots/cnn_speedup.png"));
}

TEST(ReportCli, WithoutAWorkingPythonTheTablesAreWrittenAndTheReportSaysWhy) {
  TempDir dir;
  write_run(dir, "sim");
  const Cli r =
      run_cli(dir, "report " + quoted(dir.path().string()) + " --python /nonexistent/python3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/python3"), std::string::npos) << r.err;
  const std::string md = testing::read_file(dir / "report.md");
  EXPECT_NE(md.find("Figures not rendered"), std::string::npos);
  EXPECT_NE(md.find("## Break-even model size"), std::string::npos);
}

TEST(ReportCli, NotAResultsFolderIsOneErrorLine) {
  TempDir dir;
  const Cli r = run_cli(dir, "report " + quoted((dir / "nothing").string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nothing: not a folder of results"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

}  // namespace
}  // namespace dpushard
