// `dpushard report` and its parts on synthetic scaling-suite output: the break-even rule,
// speedup and efficiency against the 1-node baseline, repetitions, failed configurations,
// bad input, and the rendered report.md and PNG figures.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>

#include "dpushard/base/error.hpp"
#include "harness/synthetic_results.hpp"
#include "report/analysis.hpp"
#include "report/dpu_section.hpp"
#include "report/markdown.hpp"
#include "report/published.hpp"
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
  EXPECT_NEAR(find(t, 2, "experts").at, 1.2, 1e-9);
  EXPECT_EQ(find(t, 2, "pipeline").kind, BreakEven::Kind::Never);
  EXPECT_EQ(find(t, 2, "pipeline").size.label, "10M");
  EXPECT_EQ(find(t, 2, "replicate").kind, BreakEven::Kind::Always);
  EXPECT_EQ(find(t, 2, "replicate").size.label, "2M");
  // Winning at 2M but losing at 5M does not count: the break-even is where it stays won.
  EXPECT_EQ(find(t, 3, "experts").kind, BreakEven::Kind::From);
  EXPECT_EQ(find(t, 3, "experts").size.label, "10M");
  EXPECT_EQ(find(t, 3, "pipeline").kind, BreakEven::Kind::Always);

  EXPECT_EQ(report::break_even_cell(find(t, 2, "experts")), "5M (1.20×)");
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

report::Row row_with(const std::string& size, double speedup, double lo, double hi) {
  report::Row r;
  r.m.size = size;
  r.m.params = 1;
  r.has_baseline = true;
  r.speedup = speedup;
  r.speedup_lo = lo;
  r.speedup_hi = hi;
  return r;
}

TEST(ReportAnalysis, BreakEvenNeedsTheSpeedupsWholeIntervalAboveOne) {
  // 1.04 at 5M, but its interval reaches down to 0.99: not a win yet.
  const report::Row a = row_with("2M", 1.03, 0.97, 1.09), b = row_with("5M", 1.04, 0.99, 1.10),
                    c = row_with("10M", 1.20, 1.12, 1.28), d = row_with("20M", 1.40, 1.30, 1.50);
  const std::vector<const report::Row*> series = {&a, &b, &c, &d};
  const BreakEven with_interval = report::break_even(
      series, &report::Row::speedup, &report::Row::speedup_lo, &report::Row::speedup_hi);
  EXPECT_EQ(with_interval.kind, BreakEven::Kind::From);
  EXPECT_EQ(with_interval.size.label, "10M");
  // 2M's and 5M's intervals straddle 1: noise decides, and the cell states the range, from
  // the smallest size (both count as wins) to 10M (they count as losses).
  EXPECT_EQ(report::break_even_cell(with_interval), "≈ ≤ 2M–10M (noise)");
  ASSERT_EQ(with_interval.straddling.size(), 2u);
  EXPECT_EQ(with_interval.reach.label, "2M");
  // The point estimates alone would have declared it at the smallest size.
  EXPECT_EQ(report::break_even(series, &report::Row::speedup).kind, BreakEven::Kind::Always);
  // An interval that reaches 1 at the largest size: no break-even.
  const report::Row e = row_with("50M", 1.05, 0.98, 1.12);
  const BreakEven never = report::break_even({&a, &b, &c, &d, &e}, &report::Row::speedup,
                                             &report::Row::speedup_lo, &report::Row::speedup_hi);
  EXPECT_EQ(never.kind, BreakEven::Kind::Never);
  // Every size straddles: the range spans them all, said short.
  EXPECT_EQ(report::break_even_cell(never), "≈ any size (noise)");
  // Firm when no interval straddles: 1.20 [1.12, 1.28] at 10M after a loss at 5M.
  const report::Row lost = row_with("5M", 0.95, 0.90, 0.99);
  const BreakEven firm = report::break_even({&a, &lost, &c, &d}, &report::Row::speedup,
                                            &report::Row::speedup_lo, &report::Row::speedup_hi);
  EXPECT_FALSE(firm.noisy);
  EXPECT_EQ(report::break_even_cell(firm), "10M (1.20× [1.12, 1.28])");
}

// A cell whose answer depends on noise says so instead of flipping, from either side: two
// runs at one commit read a size near the threshold 1.05x on opposite sides of it (the
// committed reference and a fresh run read CNN 3-node experts' 1M at 1.05-1.07x, and four
// cells changed between two quiet runs, each marked in one run only under a 2 % margin).
TEST(ReportAnalysis, ABreakEvenThatNoiseDecidesIsMarkedNotFlipped) {
  const auto with = [](const std::vector<const report::Row*>& series, double margin) {
    return report::break_even(series, &report::Row::speedup, &report::Row::speedup_lo,
                              &report::Row::speedup_hi, report::kDefaultMinGain, margin);
  };
  const double m = report::kDefaultNoiseMargin;
  EXPECT_NEAR(m, 0.07, 1e-12);  // the p95 of two quiet runs' spread (analysis.hpp)
  const double threshold = 1 + report::kDefaultMinGain;
  // One repetition each (no interval): 1M read below the threshold in one run and above it
  // in the other, as far apart as the margin allows (and 0.99-1.08, as runs read them).
  for (const double one_m :
       {0.99, 1.02, 1.04, 1.06, 1.08, threshold / (1 + m) * 1.001, threshold * (1 + m) * 0.999}) {
    const report::Row a = row_with("1M", one_m, one_m, one_m), b = row_with("2M", 1.50, 1.50, 1.50),
                      c = row_with("5M", 2.0, 2.0, 2.0);
    // Without a margin the runs disagree: <= 1M above the threshold, 2M below it.
    EXPECT_EQ(with({&a, &b, &c}, 0).kind,
              one_m > threshold ? BreakEven::Kind::Always : BreakEven::Kind::From);
    // With the margin every reading reads the same cell, marked as noise.
    const BreakEven be = with({&a, &b, &c}, m);
    EXPECT_TRUE(be.noisy) << one_m;
    EXPECT_EQ(report::break_even_cell(be), "≈ ≤ 1M–2M (noise)") << one_m;
    EXPECT_EQ(be.reach.label, "1M");
    ASSERT_EQ(be.straddling.size(), 1u);
    EXPECT_NEAR(be.straddling[0].lo, one_m / (1 + m), 1e-12);
    EXPECT_NEAR(be.straddling[0].hi, one_m * (1 + m), 1e-12);
  }
  // Any two readings on opposite sides of the threshold no more than the margin apart (the
  // spread between runs the margin stands for) read the same marked cell.
  for (double below = threshold / (1 + m) * 1.0005; below <= threshold; below += 0.002)
    for (double above = std::nextafter(threshold, 2.0); above <= below * (1 + m); above += 0.002) {
      const report::Row lo = row_with("1M", below, below, below),
                        hi = row_with("1M", above, above, above), b = row_with("2M", 1.5, 1.5, 1.5);
      const BreakEven x = with({&lo, &b}, m), y = with({&hi, &b}, m);
      EXPECT_TRUE(x.noisy && y.noisy) << below << " and " << above;
      EXPECT_EQ(report::break_even_cell(x), report::break_even_cell(y)) << below << " " << above;
    }
  // Beyond the margin, either side, the cell is firm: 1.13x is a win (1.13 / 1.07 > 1.05),
  // 0.97x a loss (0.97 x 1.07 < 1.05).
  const report::Row d = row_with("1M", 1.13, 1.13, 1.13), e = row_with("2M", 1.5, 1.5, 1.5);
  const BreakEven firm = with({&d, &e}, m);
  EXPECT_FALSE(firm.noisy);
  EXPECT_EQ(firm.kind, BreakEven::Kind::Always);
  const report::Row f = row_with("1M", 0.97, 0.97, 0.97);
  const BreakEven lost = with({&f, &e}, m);
  EXPECT_FALSE(lost.noisy);
  EXPECT_EQ(report::break_even_cell(lost), "2M (1.50×)");
  // A repetitions' interval wider than the margin widens the band: 1.20x [1.02, 1.38].
  const report::Row g = row_with("1M", 1.20, 1.02, 1.38);
  EXPECT_TRUE(with({&g, &e}, m).noisy);
  // Never, noisy: only the largest size reads within the band (1.02x): that size or beyond.
  const report::Row h = row_with("2M", 1.02, 1.02, 1.02);
  EXPECT_EQ(report::break_even_cell(with({&f, &h}, m)), "≈ ≥ 2M (noise)");

  // In the report: the cell, its footnote naming the straddling size, and the rule stated.
  auto configs = testing::cnn_configs();
  for (auto& c : configs)  // 2M on 3 nodes, experts: 1.08x (base 100 fps), above 1.05x
    if (c.nodes == 3 && c.strategy == "experts" && c.size == "2M") c.fps = 108;
  for (auto& c : configs)
    if (c.nodes == 3 && c.strategy == "experts" && c.size == "5M") c.fps = 50 * 1.3;
  const json doc = testing::benchmark_json("cnn", configs, "sim");
  const auto a = report::analyze(parse(doc));
  const BreakEven& be = find(a.families[0].throughput_break_even, 3, "experts");
  EXPECT_TRUE(be.noisy);
  EXPECT_EQ(be.size.label, "5M");
  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  const std::string text = report::render_markdown(parse(doc), a, md);
  EXPECT_NE(text.find("≈ ≤ 2M–5M (noise)¹"), std::string::npos) << text.substr(0, 4000);
  EXPECT_NE(text.find("¹ Noise: 3 nodes, experts: 2M's 1.08× [1.01, 1.16] lies within 7 % of "
                      "1.05×, so noise decides where the break-even lies between ≤ 2M and 5M."),
            std::string::npos)
      << text.substr(0, 4000);
  EXPECT_NE(text.find("sizes below B lie within 7 % of the threshold, on either side"),
            std::string::npos);
  EXPECT_THROW(report::analyze(parse(doc), {.noise_margin = 0.6}), Error);
}

// A noisy cell states the range its break-even lies in: from `reach` (the straddling sizes
// counted as wins; "≤ S" at the smallest size) to where the firm walk stopped (they count as
// losses; "> S" when not even the largest size wins). A firm cell is a range of one size.
TEST(ReportAnalysis, ANoisyCellStatesTheRangeItsBreakEvenLiesIn) {
  const auto with = [](const std::vector<const report::Row*>& series) {
    return report::break_even(series, &report::Row::speedup, nullptr, nullptr,
                              report::kDefaultMinGain, report::kDefaultNoiseMargin);
  };
  // Bands for 1.05x at 7 %: a win above 1.1235x, a loss at or below 0.981x.
  const report::Row loss1 = row_with("1M", 0.90, 0, 0), near1 = row_with("1M", 1.06, 0, 0),
                    win1 = row_with("1M", 1.30, 0, 0), near2 = row_with("2M", 1.02, 0, 0),
                    win2 = row_with("2M", 1.30, 0, 0), near5 = row_with("5M", 1.10, 0, 0),
                    win5 = row_with("5M", 1.40, 0, 0), loss5 = row_with("5M", 0.95, 0, 0),
                    win10 = row_with("10M", 1.50, 0, 0), near10 = row_with("10M", 1.04, 0, 0);
  // From, noisy, the range's lower end a size above the smallest: 1M a firm loss.
  BreakEven be = with({&loss1, &near2, &win5, &win10});
  EXPECT_EQ(be.kind, BreakEven::Kind::From);
  EXPECT_EQ(report::break_even_answer(be), "≈ 2M–5M (noise)");
  EXPECT_EQ(report::break_even_cell(be), "≈ 2M–5M (noise)");  // no speedup: it moves
  EXPECT_EQ(report::range_end_text(be, false), "2M");
  EXPECT_EQ(report::range_end_text(be, true), "5M");
  // Down to the smallest size: "≤ 1M" at the lower end; winning sizes between straddling
  // ones are walked through.
  be = with({&near1, &win2, &near5, &win10});
  EXPECT_EQ(report::break_even_answer(be), "≈ ≤ 1M–10M (noise)");
  EXPECT_EQ(be.straddling.size(), 2u);
  // Never, noisy: the upper end is "> the largest size".
  be = with({&loss1, &win2, &near5, &near10});
  EXPECT_EQ(be.kind, BreakEven::Kind::Never);
  EXPECT_EQ(report::break_even_answer(be), "≈ 2M–> 10M (noise)");  // 2M wins below 5M
  const report::Row loss2 = row_with("2M", 0.90, 0, 0);
  be = with({&loss1, &loss2, &near5, &near10});
  EXPECT_EQ(report::break_even_answer(be), "≈ 5M–> 10M (noise)");
  // The ranges with nothing firm in them: only the largest size straddles ("5M–> 5M": 5M
  // or beyond), or every size does ("≤ 1M–> 2M"). The note's ends stay as they are.
  be = with({&loss1, &loss2, &near5});
  EXPECT_EQ(report::break_even_answer(be), "≈ ≥ 5M (noise)");
  EXPECT_EQ(report::range_end_text(be, false), "5M");
  EXPECT_EQ(report::range_end_text(be, true), "> 5M");
  be = with({&near1, &near2});
  EXPECT_EQ(report::break_even_answer(be), "≈ any size (noise)");
  EXPECT_EQ(report::range_end_text(be, false), "≤ 1M");
  be = with({&near10});
  EXPECT_EQ(report::break_even_answer(be), "≈ any size (noise)");  // one size, straddling
  // Always is never noisy (nothing below the smallest size straddles), and firm cells keep
  // their form and speedup.
  be = with({&win1, &win2, &win5});
  EXPECT_EQ(be.kind, BreakEven::Kind::Always);
  EXPECT_FALSE(be.noisy);
  EXPECT_EQ(report::break_even_answer(be), "≤ 1M");
  EXPECT_EQ(report::break_even_cell(be), "≤ 1M (1.30×)");
  be = with({&win1, &loss5, &win10});
  EXPECT_EQ(report::break_even_answer(be), "10M");
  EXPECT_EQ(report::break_even_cell(be), "10M (1.50×)");
  be = with({&win1, &loss5});
  EXPECT_EQ(report::break_even_answer(be), "> 5M");
  EXPECT_EQ(report::break_even_cell(be), "> 5M (0.95× at 5M)");
  EXPECT_EQ(report::break_even_answer(BreakEven{}), "—");

  // The published-result section states the same range, with the best strategy: the one
  // that surely pays off soonest (2 nodes: experts from 5M, firm, beats replicate's
  // 2M-10M range), then the one that may pay off soonest among equals.
  std::vector<testing::SyntheticConfig> configs;
  const std::vector<std::tuple<std::string, double, double, double, double>> sizes = {
      // size, params, 1-node fps, 2-node experts speedup, 2-node replicate speedup
      {"1M", 1e6, 100, 0.90, 0.90},
      {"2M", 2e6, 50, 0.95, 1.06},
      {"5M", 5e6, 20, 1.30, 1.02},
      {"10M", 10e6, 10, 1.40, 1.40}};
  for (const auto& [size, params, base, experts, replicate] : sizes) {
    configs.push_back({size, params, 1, "single", base});
    configs.push_back({size, params, 2, "experts", base * experts});
    configs.push_back({size, params, 2, "replicate", base * replicate});
  }
  auto a = report::analyze(parse(testing::benchmark_json("cnn", configs, "sim")));
  EXPECT_EQ(report::break_even_answer(find(a.families[0].throughput_break_even, 2, "replicate")),
            "≈ 2M–10M (noise)");
  std::string text = report::render_published_section(a, std::nullopt);
  EXPECT_NE(text.find("cnn: throughput (Offline) 5M (experts)"), std::string::npos) << text;
  // Experts noisy too (2M at 1.08x, within the band): its range 2M-5M still ends below
  // replicate's.
  for (auto& c : configs)
    if (c.nodes == 2 && c.strategy == "experts" && c.size == "2M") c.fps = 50 * 1.08;
  a = report::analyze(parse(testing::benchmark_json("cnn", configs, "sim")));
  text = report::render_published_section(a, std::nullopt);
  EXPECT_NE(text.find("cnn: throughput (Offline) ≈ 2M–5M (noise) (experts)"), std::string::npos)
      << text;
  // No strategy surely pays off (10M at 1.04x), both may: the ranges tie (2M to "> 10M"),
  // the first in the table's order is named.
  for (auto& c : configs)
    if (c.nodes == 2 && c.size == "10M") c.fps = 10 * 1.04;
  a = report::analyze(parse(testing::benchmark_json("cnn", configs, "sim")));
  text = report::render_published_section(a, std::nullopt);
  EXPECT_NE(text.find("cnn: throughput (Offline) ≈ 2M–> 10M (noise) (experts)"), std::string::npos)
      << text;
}

// The point of the range: two runs that read every size within the band of one another
// state overlapping ranges, whichever side of a band edge each reading fell. Seeded
// pseudo-random series around the threshold; the old single-size cell ("≈ S (noise)", S
// the firm walk's stop) differed in some of the same pairs.
TEST(ReportAnalysis, TwoRunsWithinTheBandStateOverlappingRanges) {
  const double m = report::kDefaultNoiseMargin;
  const std::vector<std::string> labels = {"1M", "2M", "5M", "10M", "20M", "50M"};
  const auto with = [&](const std::vector<report::Row>& rows) {
    std::vector<const report::Row*> series;
    for (const auto& r : rows) series.push_back(&r);
    return report::break_even(series, &report::Row::speedup, nullptr, nullptr,
                              report::kDefaultMinGain, m);
  };
  const auto index = [&](const std::string& label) {
    return static_cast<int>(std::find(labels.begin(), labels.end(), label) - labels.begin());
  };
  // The range as size indices: "> the largest" is one past it.
  const auto range = [&](const BreakEven& be) {
    const int hi =
        be.kind == BreakEven::Kind::Never ? static_cast<int>(labels.size()) : index(be.size.label);
    return std::make_pair(be.noisy ? index(be.reach.label) : hi, hi);
  };
  std::uint64_t state = 0x9e3779b97f4a7c15ULL;
  const auto uniform = [&](double lo, double hi) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
  };
  int old_differ = 0, ranges_differ = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<report::Row> a, b;
    for (const auto& label : labels) {
      const double v = uniform(0.85, 1.30);
      // The second run within a factor (1 + m) of the first, either way (the edge excluded).
      const double f = std::exp(uniform(-1, 1) * std::log1p(m) * 0.9999);
      a.push_back(row_with(label, v, 0, 0));
      b.push_back(row_with(label, v * f, 0, 0));
    }
    const BreakEven x = with(a), y = with(b);
    const auto [xlo, xhi] = range(x);
    const auto [ylo, yhi] = range(y);
    ASSERT_LE(xlo, xhi);
    ASSERT_TRUE(std::max(xlo, ylo) <= std::min(xhi, yhi))
        << report::break_even_answer(x) << " vs " << report::break_even_answer(y);
    if (x.size.label != y.size.label || x.kind != y.kind || x.noisy != y.noisy) ++old_differ;
    if (report::break_even_answer(x) != report::break_even_answer(y)) ++ranges_differ;
  }
  // The test has teeth: the old cells disagreed in many of these pairs, and so do the
  // ranges themselves (identity cannot be promised, overlap can).
  EXPECT_GT(old_differ, 100);
  EXPECT_GT(ranges_differ, 100);
  // Beyond the band the promise ends: 1M read 0.95x and 1.20x (26 % apart) gives "2M" and
  // "≤ 1M", disjoint.
  const BreakEven lo = with({row_with("1M", 0.95, 0, 0), row_with("2M", 1.5, 0, 0)});
  const BreakEven hi = with({row_with("1M", 1.20, 0, 0), row_with("2M", 1.5, 0, 0)});
  EXPECT_EQ(report::break_even_answer(lo), "2M");
  EXPECT_EQ(report::break_even_answer(hi), "≤ 1M");
}

// The run's own spread (a measurement's halves apart) takes the margin's place where it is
// larger: a size the margin alone would call firm is marked as noise when its own run saw a
// load come or go (on a loaded machine the two readings furthest from the other runs', the
// CNN 2-node experts' SingleStream 10M at 1.67x and 20M at 0.84x, carried own spreads of 12 %
// and 13 %; the others 0-8 %).
TEST(ReportAnalysis, TheRunsOwnSpreadWiderThanTheMarginTakesItsPlace) {
  const double m = report::kDefaultNoiseMargin;
  const auto with = [&](const std::vector<const report::Row*>& series) {
    return report::break_even(series, &report::Row::speedup, &report::Row::speedup_lo,
                              &report::Row::speedup_hi, report::kDefaultMinGain, m,
                              &report::Row::speedup_spread);
  };
  // 1M at 1.15x clears the 7 % band (1.15 / 1.07 = 1.075 > 1.05): firm on the margin alone.
  report::Row a = row_with("1M", 1.15, 1.15, 1.15);
  const report::Row b = row_with("2M", 1.5, 1.5, 1.5);
  EXPECT_FALSE(with({&a, &b}).noisy);
  EXPECT_EQ(report::break_even_cell(with({&a, &b})), "≤ 1M (1.15×)");
  // An own spread within the margin changes nothing (the margin holds a quiet run's).
  a.speedup_spread = 0.05;
  EXPECT_FALSE(with({&a, &b}).noisy);
  // Its own run read its halves 10 % apart: 1.15 / 1.10 = 1.045 straddles 1.05.
  a.speedup_spread = 0.10;
  const BreakEven noisy = with({&a, &b});
  EXPECT_TRUE(noisy.noisy);
  EXPECT_EQ(report::break_even_cell(noisy), "≈ ≤ 1M–2M (noise)");
  ASSERT_EQ(noisy.straddling.size(), 1u);
  EXPECT_NEAR(noisy.straddling[0].lo, 1.15 / 1.10, 1e-12);
  EXPECT_NEAR(noisy.straddling[0].hi, 1.15 * 1.10, 1e-12);
  EXPECT_NEAR(noisy.straddling[0].spread, 0.10, 1e-12);
  // Without the spread member (a run that did not record it): the margin alone.
  EXPECT_FALSE(report::break_even({&a, &b}, &report::Row::speedup, nullptr, nullptr,
                                  report::kDefaultMinGain, m)
                   .noisy);
  // A loss far below the threshold stays a loss however wide: 0.80 x 1.10 < 1.05.
  report::Row lost = row_with("1M", 0.80, 0.80, 0.80);
  lost.speedup_spread = 0.10;
  EXPECT_FALSE(with({&lost, &b}).noisy);
  // A straddling size whose own spread was within the margin names no spread.
  report::Row near = row_with("1M", 1.06, 1.06, 1.06);
  near.speedup_spread = 0.03;
  const BreakEven plain = with({&near, &b});
  ASSERT_EQ(plain.straddling.size(), 1u);
  EXPECT_EQ(plain.straddling[0].spread, 0.0);

  // From the suite's counters: 2M on 3 nodes, experts, at 1.15x (base 100 fps), its run's
  // halves 6 % apart and the baseline's 4.5 %: [1.15 / 1.105, 1.15 x 1.105] straddles.
  auto configs = testing::cnn_configs();
  for (auto& c : configs)
    if (c.nodes == 3 && c.strategy == "experts" && c.size == "2M") c.fps = 115;
  for (auto& c : configs)
    if (c.nodes == 3 && c.strategy == "experts" && c.size == "5M") c.fps = 50 * 1.3;
  json doc = testing::benchmark_json("cnn", configs, "sim");
  const auto firm = report::analyze(parse(doc));
  EXPECT_FALSE(find(firm.families[0].throughput_break_even, 3, "experts").noisy);
  for (auto& e : doc["benchmarks"]) {
    const std::string name = e["run_name"];
    if (name.find("params:2M/nodes:3/strategy:experts") != std::string::npos)
      e["fps_spread"] = 0.06;
    if (name.find("params:2M/nodes:1/") != std::string::npos) e["fps_spread"] = 0.045;
  }
  const auto a2 = report::analyze(parse(doc));
  const report::Row* row = a2.families[0].find("2M", 3, "experts");
  ASSERT_NE(row, nullptr);
  EXPECT_NEAR(row->speedup_spread, 0.105, 1e-12);
  const BreakEven& be = find(a2.families[0].throughput_break_even, 3, "experts");
  EXPECT_TRUE(be.noisy);
  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  const std::string text = report::render_markdown(parse(doc), a2, md);
  EXPECT_NE(
      text.find("¹ Noise: 3 nodes, experts: 2M's 1.15× [1.04, 1.27, own spread 10.5 %] "
                "lies within 7 % (or its own spread, where named) of 1.05×, so noise decides where "
                "the break-even lies between ≤ 2M and 5M."),
      std::string::npos)
      << text.substr(0, 5000);
  EXPECT_NE(text.find("and it is larger than the margin, it takes the margin's place"),
            std::string::npos);
}

// Above 100 % parallel efficiency is a measurement error where no bound says what the plan
// can do; with the plan's node bound and the baseline's known, the bound decides (two quiet
// runs struck out a 3-node plan at 101.5 % efficiency, 1.5 % under its bound, in one run).
TEST(ReportAnalysis, EfficiencyAboveOneWithinTheBoundsIsNotStruckOut) {
  report::Row r;
  r.m.nodes = 3;
  r.m.fps = 67.65;
  r.m.bound_node_fps = 66.68;  // 1.5 % above: within the 2 % tolerance
  r.has_baseline = true;
  r.speedup = 3.044;
  r.efficiency = r.speedup / 3;
  r.baseline_bound_node_fps = 22.26;
  EXPECT_EQ(report::measurement_error(r), "");
  // Without the baseline's bound, the efficiency check holds as before.
  r.baseline_bound_node_fps = 0;
  EXPECT_NE(report::measurement_error(r).find("101 % parallel efficiency"), std::string::npos)
      << report::measurement_error(r);
  // Above the plan's own bound by more than 2 %: an error whatever the baseline.
  r.baseline_bound_node_fps = 22.26;
  r.m.fps = 68.5;
  EXPECT_NE(report::measurement_error(r).find("above the 66.7 fps its busiest node allows"),
            std::string::npos)
      << report::measurement_error(r);
}

TEST(ReportAnalysis, BreakEvenNeedsMoreThanTheMinimumGain) {
  // A pipeline hovering at 1.01-1.04x with narrow intervals: any gain counts with 0 and the
  // table says it beats one node everywhere; with the default 5 % it never does, which is
  // what a second run of the same sweep agrees with.
  const report::Row a = row_with("1M", 1.04, 1.02, 1.05), b = row_with("5M", 1.03, 1.02, 1.04),
                    c = row_with("20M", 1.01, 1.005, 1.02);
  const std::vector<const report::Row*> flat = {&a, &b, &c};
  const auto with = [](const std::vector<const report::Row*>& series, double min_gain) {
    return report::break_even(series, &report::Row::speedup, &report::Row::speedup_lo,
                              &report::Row::speedup_hi, min_gain);
  };
  EXPECT_EQ(with(flat, 0).kind, BreakEven::Kind::Always);
  EXPECT_EQ(with(flat, report::kDefaultMinGain).kind, BreakEven::Kind::Never);
  // A real gain: 1.06 at 5M is not enough when its interval starts at 1.04, 1.12 at 10M is.
  const report::Row d = row_with("2M", 1.02, 1.01, 1.03), e = row_with("5M", 1.06, 1.04, 1.08),
                    f = row_with("10M", 1.12, 1.08, 1.16), g = row_with("20M", 1.30, 1.25, 1.35);
  const BreakEven from = with({&d, &e, &f, &g}, report::kDefaultMinGain);
  EXPECT_EQ(from.kind, BreakEven::Kind::From);
  EXPECT_EQ(from.size.label, "10M");
  EXPECT_EQ(with({&d, &e, &f, &g}, 0).size.label, "2M");
  // The latency table has no interval: its point estimate must clear the gain.
  EXPECT_EQ(
      report::break_even({&e, &f, &g}, &report::Row::speedup, nullptr, nullptr, 0.10).size.label,
      "10M");
}

TEST(ReportAnalysis, MinimumGainOutsideItsRangeIsRefused) {
  const auto r = parse(testing::benchmark_json("cnn", testing::cnn_configs(), "sim"));
  EXPECT_THROW(report::analyze(r, {.min_gain = -0.01}), Error);
  EXPECT_THROW(report::analyze(r, {.min_gain = 1.0}), Error);
  EXPECT_EQ(report::analyze(r, {.min_gain = 0.2}).min_gain, 0.2);
}

TEST(ReportResults, RepetitionsGiveTheMeansConfidenceInterval) {
  // Three repetitions at fps -1 %, fps, +1 %: sd 1 % of fps, the 95 % half-width
  // t(2) * sd / sqrt(3) = 4.303 * 1 % / 1.732 = 2.48 % of fps.
  const auto r = parse(testing::benchmark_json("cnn", testing::cnn_configs(), "sim", 3));
  const auto& m = r.measurements[0];
  EXPECT_NEAR(m.fps_stddev, 1.0, 1e-9);
  EXPECT_NEAR(m.fps_lo, 100 - 4.303 / std::sqrt(3.0), 1e-6);
  EXPECT_NEAR(m.fps_hi, 100 + 4.303 / std::sqrt(3.0), 1e-6);
  const auto a = report::analyze(r, {.min_gain = 0});
  const report::Row* row = a.families[0].find("10M", 2, "experts");
  ASSERT_NE(row, nullptr);
  const double half = 4.303 / std::sqrt(3.0) / 100;
  EXPECT_NEAR(row->speedup_lo, 1.5 * (1 - half) / (1 + half), 1e-9);
  EXPECT_NEAR(row->speedup_hi, 1.5 * (1 + half) / (1 - half), 1e-9);
  // 3 nodes pipeline wins 1.2x at 2M, whose interval [1.14, 1.26] stays above 1 ...
  EXPECT_EQ(find(a.families[0].throughput_break_even, 3, "pipeline").kind, BreakEven::Kind::Always);
  // ... but not above a minimum gain of 15 %, even without the noise margin.
  EXPECT_NE(find(report::analyze(r, {.min_gain = 0.15, .noise_margin = 0})
                     .families[0]
                     .throughput_break_even,
                 3, "pipeline")
                .kind,
            BreakEven::Kind::Always);
}

TEST(ReportAnalysis, AFitOffByMoreThanTenPercentNamesTheMeasuredComponent) {
  report::Measurement m;
  m.fps = 156;
  m.predicted_fps = 204;
  m.params = 20e6;
  // The busiest node waits 6.40 ms per frame where the plan predicts 4.90 ms.
  m.node_ms = 6.40;
  m.predicted_node_ms = 4.90;
  m.worker_cpu_ms = 0.2;
  m.orchestrator_cpu_ms = 0.3;
  m.link_paced = 1;
  m.node_tx_bytes = 300e3;
  const std::string node = report::fit_cause(m, 1.0);
  EXPECT_NE(node.find("busiest node's backend takes 6.40 ms per frame, the plan predicts 4.90"),
            std::string::npos)
      << node;
  EXPECT_EQ(node.find("CPU"), std::string::npos) << node;

  // Nodes that wait for work, and workers burning CPU on this machine.
  m.node_ms = 4.90;
  m.worker_cpu_ms = 3.0;
  const std::string idle = report::fit_cause(m, 1.0);
  EXPECT_NE(idle.find("idle"), std::string::npos) << idle;
  EXPECT_NE(idle.find("the workers' own CPU time on this machine is 3.00 ms per frame"),
            std::string::npos)
      << idle;

  // Faster than predicted on an unshaped link that the plan counted.
  m.fps = 260;
  m.worker_cpu_ms = 0.2;
  m.node_ms = 3.8;
  m.link_paced = 0;
  m.node_tx_bytes = 600e3;  // 4.8 ms at 1 Gbit/s
  const std::string link = report::fit_cause(m, 1.0);
  EXPECT_NE(link.find("the link is unshaped"), std::string::npos) << link;
}

TEST(ReportAnalysis, ARateAboveWhatThePlanAllowsIsAMeasurementErrorKeptOutOfBreakEvens) {
  // ConvViT 20M on 4 nodes, replicate, as the old rate read it: 95.1 fps where each copy
  // takes 44.9 ms a frame (4 copies: 89.1 fps at most): 4.27x one node, 107 %.
  auto configs = testing::cnn_configs();
  for (auto& c : configs)
    if (c.nodes == 3 && c.strategy == "replicate" && c.size == "10M") c.fps = 20 * 3.2;
  json doc = testing::benchmark_json("cnn", configs, "sim");
  for (auto& b : doc["benchmarks"])
    if (b["run_name"].get<std::string>().find("params:10M/nodes:3/strategy:replicate") !=
        std::string::npos)
      b["bound_node_fps"] = 60.0;  // 3 copies of a 50 ms fragment
  const auto a = report::analyze(parse(doc));
  const auto& fa = a.families[0];
  const report::Row* r = fa.find("10M", 3, "replicate");
  ASSERT_NE(r, nullptr);
  EXPECT_NE(r->measurement_error.find("64.0 fps measured, 7 % above the 60.0 fps its busiest "
                                      "node allows"),
            std::string::npos)
      << r->measurement_error;
  // Kept out of the break-even: replicate on 3 nodes now breaks even from what 2M and 5M
  // show, with the largest size it can trust being 5M.
  const BreakEven& be = find(fa.throughput_break_even, 3, "replicate");
  EXPECT_EQ(be.kind, BreakEven::Kind::Always);
  EXPECT_NEAR(be.at, 2.7, 1e-9);
  // Within 2 % of the bound is a measurement (59.5 fps, 1.7 % above a 58.5 fps bound).
  report::Row near = *r;
  near.m.bound_node_fps = 58.5;
  near.m.fps = 59.5;
  near.speedup = 59.5 / 20;
  near.efficiency = near.speedup / 3;
  near.measurement_error.clear();
  EXPECT_EQ(report::measurement_error(near), "");

  // Above 100 % efficiency without a bound named: flagged all the same.
  report::Row over = near;
  over.m.bound_node_fps = 0;
  over.m.fps = 62;
  over.speedup = 3.1;
  over.efficiency = 3.1 / 3;
  EXPECT_NE(report::measurement_error(over).find("103 % parallel efficiency: 3 nodes cannot do "
                                                 "more than 3 times one node's work"),
            std::string::npos)
      << report::measurement_error(over);
  // The head node's port: 152 kB of input per frame at 118.7 MB/s allow 781 fps.
  report::Row port = near;
  port.m.bound_node_fps = 0;
  port.m.bound_port_fps = 781;
  port.m.fps = 830;
  port.efficiency = 0.5;
  EXPECT_NE(report::measurement_error(port).find("the head node's port allows"), std::string::npos);

  // The report shows it as an error with its cause.
  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  const std::string text = report::render_markdown(parse(doc), a, md);
  EXPECT_NE(text.find("measurement error ⚠"), std::string::npos);
  EXPECT_NE(text.find("**Measurement errors**"), std::string::npos);
  EXPECT_NE(text.find("10M on 3 nodes, replicate: 64.0 fps measured"), std::string::npos);
}

TEST(ReportAnalysis, AMeasurementErrorNamesTheWholeRunsRateBesideTheBusyTimeBound) {
  // ConvViT 20M on 3 nodes, experts, as a loaded run read it: 68.2 fps steady where each
  // expert is busy 15.0 ms a frame (66.7 fps), the whole run 65.4 fps.
  auto configs = testing::cnn_configs();
  for (auto& c : configs)
    if (c.nodes == 3 && c.strategy == "experts" && c.size == "10M") c.fps = 68.2;
  json doc = testing::benchmark_json("cnn", configs, "sim");
  for (auto& b : doc["benchmarks"])
    if (b["run_name"].get<std::string>().find("params:10M/nodes:3/strategy:experts") !=
        std::string::npos) {
      b["bound_node_fps"] = 66.7;
      b["span_fps"] = 65.4;
      b["label"] = "experts [planner's choice]";
    }
  const auto a = report::analyze(parse(doc));
  // The planner's choice line says so, and takes the highest throughput from the others.
  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  const std::string text = report::render_markdown(parse(doc), a, md);
  EXPECT_NE(text.find("- 10M on 3 nodes: the planner picks experts (68.2 fps, 3.41×, a "
                      "measurement error ⚠); highest throughput measured: replicate (58.0 fps"),
            std::string::npos)
      << text;
  const report::Row* r = a.families[0].find("10M", 3, "experts");
  ASSERT_NE(r, nullptr);
  EXPECT_NEAR(r->m.span_fps, 65.4, 1e-9);
  const std::string& e = r->measurement_error;
  EXPECT_NE(e.find("68.2 fps measured, 2 % above the 66.7 fps its busiest node allows"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("busy time per frame: DPU and A53, or its network thread when longer; or "
                   "the DPU time of every fragment one board holds, which share its DPU; no "
                   "waiting counted"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("the whole run's rate, its fill included, is 65.4 fps, within it"),
            std::string::npos)
      << e;
  // A whole-run rate above the bound as well is said to be so.
  report::Row both = *r;
  both.m.span_fps = 69.0;
  EXPECT_NE(report::measurement_error(both).find("is 69.0 fps, above it too"), std::string::npos);
  // Above 100 % efficiency: the whole run is held to N times one node's rate.
  report::Row over = *r;
  over.m.bound_node_fps = 0;
  over.m.fps = 62;
  over.m.span_fps = 58;
  over.speedup = 3.1;
  over.efficiency = 3.1 / 3;
  EXPECT_NE(report::measurement_error(over).find("is 58.0 fps, within it"), std::string::npos)
      << report::measurement_error(over);
}

// The synthetic run in both scenarios: Offline as synthesized (its p50 queued: 40 ms on
// every configuration), SingleStream with one node's frame at 10 ms and N nodes' at 10 ms /
// `single_speedup` (replicate: no faster than one node).
json with_scenarios(const json& doc) {
  json out = doc;
  out["benchmarks"] = json::array();
  for (const json& b : doc["benchmarks"]) {
    auto renamed = [](json e, const std::string& scenario) {
      for (const char* key : {"name", "run_name"}) {
        std::string name = e[key].get<std::string>();
        name.insert(name.find("/iterations"), "/scenario:" + scenario);
        e[key] = name;
      }
      return e;
    };
    json offline = renamed(b, "Offline");
    offline["p50_ms"] = 40.0;
    offline["inflight"] = 5.0;
    out["benchmarks"].push_back(offline);
    json single = renamed(b, "SingleStream");
    const int nodes = b["nodes"].get<int>();
    const bool replicate = b["run_name"].get<std::string>().find("replicate") != std::string::npos;
    single["p50_ms"] = replicate || nodes == 1 ? 10.0 : 10.0 / (1 + 0.3 * (nodes - 1));
    single["fps"] = 1000.0 / single["p50_ms"].get<double>();
    single["inflight"] = 1.0;
    out["benchmarks"].push_back(single);
  }
  return out;
}

TEST(ReportAnalysis, ThroughputComesFromOfflineAndLatencyFromSingleStreamAlone) {
  const json doc = with_scenarios(testing::benchmark_json("cnn", testing::cnn_configs(), "sim"));
  const auto a = report::analyze(parse(doc));
  ASSERT_EQ(a.families.size(), 1u);
  const auto& fa = a.families[0];
  EXPECT_TRUE(fa.scenarios);
  // One row per configuration (the SingleStream runs are folded into it), as before.
  EXPECT_EQ(fa.rows.size(), testing::cnn_configs().size());
  const report::Row* r = fa.find("10M", 3, "replicate");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->m.scenario, "Offline");
  EXPECT_NEAR(r->speedup, 2.9, 1e-9);  // Offline fps against one node's Offline fps
  // Copies of the model do not make one frame faster: SingleStream says 1.00x, where the
  // queued Offline p50 would have said whatever the queue made it.
  EXPECT_NEAR(r->latency_speedup, 1.0, 1e-9);
  EXPECT_NEAR(r->m.p50_ms, 10.0, 1e-9);
  // The Offline run's own p99 (queueing included) is kept beside: 2.25 frame times of 58 fps.
  EXPECT_NEAR(r->offline_p99_ms, 2.25 * 1000 / 58.0, 1e-9);
  EXPECT_EQ(r->latency_scenario, "SingleStream");
  const report::Row* e = fa.find("10M", 3, "experts");
  ASSERT_NE(e, nullptr);
  EXPECT_NEAR(e->latency_speedup, 1.6, 1e-9);
  // Latency break-evens from SingleStream: replicate (the data-parallel baseline) runs each
  // frame whole on one node, so one frame alone cannot beat one node: no gain, by
  // construction, whatever it read (1.00x here), not a range of sizes noise decides.
  const BreakEven& rep = find(fa.latency_break_even, 3, "replicate");
  EXPECT_EQ(rep.kind, BreakEven::Kind::NoGain);
  EXPECT_FALSE(rep.noisy);
  EXPECT_NEAR(rep.read_lo, 1.0, 1e-9);
  EXPECT_NEAR(rep.read_hi, 1.0, 1e-9);
  EXPECT_EQ(report::break_even_cell(rep), "no gain");
  EXPECT_EQ(find(fa.latency_break_even, 3, "experts").kind, BreakEven::Kind::Always);
  // Its throughput is another matter: N copies do gain with frames in flight.
  EXPECT_EQ(find(fa.throughput_break_even, 3, "replicate").kind, BreakEven::Kind::Always);
  // Throughput break-evens from Offline, as without scenarios.
  EXPECT_EQ(find(fa.throughput_break_even, 2, "experts").size.label, "5M");

  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  const std::string text = report::render_markdown(parse(doc), a, md);
  EXPECT_NE(text.find("### cnn: throughput, Offline"), std::string::npos);
  EXPECT_NE(text.find("### cnn: latency, SingleStream"), std::string::npos);
  EXPECT_NE(text.find("### Latency (SingleStream)"), std::string::npos);
  EXPECT_NE(text.find("as many as the planner says"), std::string::npos);
  EXPECT_NE(text.find("| SingleStream p50 ms |"), std::string::npos);
  // The latency table: every replicate cell "no gain" with the one note of its table, which
  // says why and gives the speedups read; the rule's paragraph says so too.
  const std::size_t latency = text.find("### cnn: latency, SingleStream");
  const std::size_t table_end = text.find("\n## ", latency);
  const std::string table = text.substr(latency, table_end - latency);
  EXPECT_NE(table.find("| 2 | ≤ 2M (1.30×) | ≤ 2M (1.30×) | no gain¹ |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| 3 | ≤ 2M (1.60×) | ≤ 2M (1.60×) | no gain¹ |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("¹ No gain: replicate runs each frame whole on one node, so with one "
                       "frame in flight it is never faster than one node, at any size; its "
                       "SingleStream speedups read 1.00×."),
            std::string::npos)
      << table;
  EXPECT_EQ(table.find("²"), std::string::npos) << table;  // one note for the table
  EXPECT_NE(text.find("with one frame in flight (SingleStream) it cannot beat one node: **no "
                      "gain**"),
            std::string::npos);
  // report --json-like answer, and the published section never names it as a break-even.
  EXPECT_EQ(report::break_even_answer(rep), "no gain");
  const std::string published = report::render_published_section(a, std::nullopt);
  EXPECT_NE(published.find("latency (SingleStream p50) ≤ 2M (experts)"), std::string::npos)
      << published;
  EXPECT_EQ(published.find("no gain"), std::string::npos) << published;

  // Only replicate swept: the published row says it gains nothing with one frame alone.
  std::vector<testing::SyntheticConfig> only;
  for (const auto& c : testing::cnn_configs())
    if (c.nodes == 1 || c.strategy == "replicate") only.push_back(c);
  const auto b =
      report::analyze(parse(with_scenarios(testing::benchmark_json("cnn", only, "sim"))));
  EXPECT_NE(report::render_published_section(b, std::nullopt)
                .find("latency (SingleStream p50) no gain (replicate)"),
            std::string::npos)
      << report::render_published_section(b, std::nullopt);
  // Without scenarios (latency under the throughput run's load, queueing included), copies
  // may shorten the queue: no structural claim, the rule decides.
  const auto c =
      report::analyze(parse(testing::benchmark_json("cnn", testing::cnn_configs(), "sim")));
  EXPECT_NE(find(c.families[0].latency_break_even, 3, "replicate").kind, BreakEven::Kind::NoGain);
}

TEST(ReportAnalysis, ServerIsTheHighestRateUnderItsBoundBesideOffline) {
  json doc = with_scenarios(testing::benchmark_json("cnn", testing::cnn_configs(), "sim"));
  json server = doc["benchmarks"][0];
  for (const char* key : {"name", "run_name"})
    server[key] =
        "cnn/params:10M/nodes:3/strategy:replicate/scenario:Server/iterations:1/manual_time";
  server["nodes"] = 3;
  server["fps"] = 50.0;
  server["latency_bound_ms"] = 30.0;
  server["p99_ms"] = 27.5;
  server["offline_fps"] = 58.0;
  doc["benchmarks"].push_back(server);
  json none = server;  // no rate met the bound: 0 fps is a result, not a broken file
  for (const char* key : {"name", "run_name"})
    none[key] = "cnn/params:10M/nodes:1/strategy:single/scenario:Server/iterations:1/manual_time";
  none["nodes"] = 1;
  none["fps"] = 0.0;
  doc["benchmarks"].push_back(none);
  const auto a = report::analyze(parse(doc));
  const auto& fa = a.families[0];
  ASSERT_EQ(fa.server.size(), 2u);
  // Server rows stay out of the throughput rows and their break-evens.
  EXPECT_EQ(fa.rows.size(), testing::cnn_configs().size());
  EXPECT_NEAR(fa.find("10M", 3, "replicate")->m.fps, 58.0, 1e-9);
  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  const std::string text = report::render_markdown(parse(doc), a, md);
  EXPECT_NE(text.find("### Server"), std::string::npos);
  EXPECT_NE(text.find("| 10M | 3 | replicate | 30.0 | 50.0 | 27.5 | 58.0 | 0.86 |"),
            std::string::npos)
      << text.substr(text.find("### Server"), 1200);
  EXPECT_NE(text.find("none met it"), std::string::npos);
}

// The Server search through `dpushard serve` (the sweep role's serve-<family>-<size>.json)
// beside the in-process orchestrator's Server row of the same configuration: rates, p50/p99,
// failed requests and serve's overhead per request at the in-process rate; nothing without
// the file, and a malformed one is an error naming it.
TEST(ReportAnalysis, ServerThroughServeIsShownBesideTheInProcessOrchestrators) {
  json doc = with_scenarios(testing::benchmark_json("cnn", testing::cnn_configs(), "sim"));
  json server = doc["benchmarks"][0];
  for (const char* key : {"name", "run_name"})
    server[key] =
        "cnn/params:10M/nodes:3/strategy:replicate/scenario:Server/iterations:1/manual_time";
  server["nodes"] = 3;
  server["fps"] = 50.0;
  server["latency_bound_ms"] = 30.0;
  server["p50_ms"] = 12.0;
  server["p99_ms"] = 27.5;
  server["offline_fps"] = 58.0;
  server["label"] = "replicate [planner's choice]";
  doc["benchmarks"].push_back(server);

  TempDir dir;
  testing::write_json(dir / "bench_cnn_scaling.json", doc);
  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  {  // no serve file: no section
    const report::RunResults results = report::read_results(dir.path());
    EXPECT_TRUE(results.serve.empty());
    const std::string text = report::render_markdown(results, report::analyze(results), md);
    EXPECT_EQ(text.find("Server through `dpushard serve`"), std::string::npos);
  }
  const json search = {{"kind", "serve_server_search"},
                       {"plan", "/m/cnn-10M/n3-replicate"},
                       {"model", "zoo_cnn"},
                       {"concurrency", 32},
                       {"context",
                        {{"family", "cnn"},
                         {"size", "10M"},
                         {"nodes", "3"},
                         {"strategy", "replicate"},
                         {"plan_label", "replicate"},
                         {"backend", "sim"}}},
                       {"search",
                        {{"bound_ms", 30.0},
                         {"top_rate", 58.0},
                         {"rate", 43.5},
                         {"p50_ms", 13.25},
                         {"p99_ms", 29.0},
                         {"trials", 7},
                         {"errors", 2},
                         {"tensors", "binary"},
                         {"at_rate",
                          {{"rate", 50.0},
                           {"achieved_rate", 49.1},
                           {"p50_ms", 12.5},
                           {"p99_ms", 31.0},
                           {"errors", {{"503", 1}}}}}}}};
  testing::write_json(dir / "serve-cnn-10M.json", search);
  const report::RunResults results = report::read_results(dir.path());
  ASSERT_EQ(results.serve.size(), 1u);
  EXPECT_EQ(results.serve[0].file, "serve-cnn-10M.json");
  const std::string text = report::render_markdown(results, report::analyze(results), md);
  const auto at = text.find("#### Server through `dpushard serve`");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_GT(at, text.find("### Server"));  // right after the in-process Server table
  EXPECT_NE(text.find("`--timing-only`"), std::string::npos);
  // in-process 50.0 (12.00 / 27.50), serve 43.5 (13.25 / 29.00), 0.87 of it, 2 + 1 failed;
  // at 50/s serve's 12.50 / 31.00 is 0.50 / 3.50 ms over the orchestrator's.
  EXPECT_NE(text.find("| 10M | 3 | replicate | 30.0 | 50.0 | 12.00 / 27.50 | 43.5 | "
                      "13.25 / 29.00 | 0.87 | 3 | 12.50 / 31.00 at 50.0/s | 0.50 / 3.50 |"),
            std::string::npos)
      << text.substr(at, 1500);
  EXPECT_NE(text.find("[`serve-cnn-10M.json`](serve-cnn-10M.json)"), std::string::npos);

  // A search with no in-process row to stand beside, and none that met the bound.
  json alone = search;
  alone["context"]["size"] = "5M";
  alone["search"]["rate"] = 0.0;
  alone["search"].erase("at_rate");
  testing::write_json(dir / "serve-cnn-5M.json", alone);
  const report::RunResults two = report::read_results(dir.path());
  const std::string text2 = report::render_markdown(two, report::analyze(two), md);
  EXPECT_NE(text2.find("| 5M | 3 | replicate | 30.0 | — (no in-process Server row) | — | none "
                       "met it | — | — | 2 | — | — |"),
            std::string::npos)
      << text2.substr(text2.find("#### Server through"), 1500);

  // Malformed: the file is named.
  json broken = search;
  broken["search"].erase("rate");
  testing::write_json(dir / "serve-cnn-5M.json", broken);
  try {
    report::read_results(dir.path());
    ADD_FAILURE() << "a serve search without its rate was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("serve-cnn-5M.json"), std::string::npos) << e.what();
  }
}

// The planner's --max-latency-ms objective judged against Server: the p99 at the highest
// rate Server found against the bound the plan was made with.
TEST(ReportAnalysis, ThePlannersLatencyBoundIsJudgedAgainstServersP99) {
  report::Measurement m;
  m.scenario = "Server";
  m.nodes = 3;
  m.fps = 50;
  m.p99_ms = 27.5;
  m.latency_bound_ms = 30;
  EXPECT_EQ(report::latency_bound_verdict(m).kind, report::LatencyBoundVerdict::Kind::NoBound);
  m.plan_max_latency_ms = 30;
  EXPECT_EQ(report::latency_bound_verdict(m).kind, report::LatencyBoundVerdict::Kind::Met);
  EXPECT_EQ(report::latency_bound_verdict(m).text, "met: p99 27.5 ms ≤ 30.0 ms at 50.0 fps");
  // Server's own bound looser than the planner's: its p99 can miss the planner's.
  m.plan_max_latency_ms = 25;
  EXPECT_EQ(report::latency_bound_verdict(m).text, "missed: p99 27.5 ms > 25.0 ms at 50.0 fps");
  // No rate met Server's bound: missed when that bound was at least the planner's, else
  // not known.
  m.fps = 0;
  EXPECT_EQ(report::latency_bound_verdict(m).kind, report::LatencyBoundVerdict::Kind::Missed);
  m.plan_max_latency_ms = 40;
  EXPECT_EQ(report::latency_bound_verdict(m).kind, report::LatencyBoundVerdict::Kind::Unknown);

  // In the report: read from the suite's counter, a column and a count.
  json doc = with_scenarios(testing::benchmark_json("cnn", testing::cnn_configs(), "sim"));
  json server = doc["benchmarks"][0];
  for (const char* key : {"name", "run_name"})
    server[key] = "cnn/params:10M/nodes:3/strategy:auto/scenario:Server/iterations:1/manual_time";
  server["nodes"] = 3;
  server["fps"] = 50.0;
  server["latency_bound_ms"] = 30.0;
  server["p99_ms"] = 31.5;
  server["offline_fps"] = 58.0;
  server["plan_max_latency_ms"] = 30.0;
  doc["benchmarks"].push_back(server);
  const auto a = report::analyze(parse(doc));
  ASSERT_EQ(a.families[0].server.size(), 1u);
  EXPECT_NEAR(a.families[0].server[0].plan_max_latency_ms, 30.0, 1e-12);
  report::MarkdownOptions md;
  md.figures = false;
  md.figures_note = "test";
  const std::string text = report::render_markdown(parse(doc), a, md);
  EXPECT_NE(text.find("missed: p99 31.5 ms > 30.0 ms at 50.0 fps |"), std::string::npos)
      << text.substr(text.find("### Server"), 2000);
  EXPECT_NE(text.find("The planner's `--max-latency-ms` objective against Server: 0 of 1 "
                      "configuration planned with a latency bound meet it."),
            std::string::npos);
}

TEST(ReportAnalysis, ThePublishedClusterResultHasOneRowPerFigureBesideThisRuns) {
  const json doc = with_scenarios(testing::benchmark_json("cnn", testing::cnn_configs(), "sim"));
  const auto a = report::analyze(parse(doc));
  const std::string text = report::render_published_section(a, std::nullopt);
  EXPECT_NE(text.find("## Against the published KV260 cluster result"), std::string::npos);
  EXPECT_NE(text.find("This run's figures are **modeled**"), std::string::npos);
  // Sizes of 100M and up were not swept here: said so, not invented.
  EXPECT_NE(text.find("| up to 1.93× on 3 nodes, models above 100M | throughput speedup over "
                      "one node, Offline (best strategy, 100M and up) | cnn: not measured (this "
                      "run's largest size is 10M) | unknown (not measured) |"),
            std::string::npos)
      << text;
  // One row per published break-even, both scenarios in it (2 nodes: replicate from 2M in
  // Offline; SingleStream experts 1.3x everywhere), the reason named from them.
  EXPECT_NE(text.find("| distribution pays off above ~25M on 2 nodes | break-even model size, "
                      "best strategy: throughput (Offline) and latency (SingleStream p50) | cnn: "
                      "throughput (Offline) ≤ 2M (replicate), latency (SingleStream p50) ≤ 2M "
                      "(experts) (modeled) | cnn: pipelining changes nothing here: 2 nodes pay "
                      "off from ≤ 2M in both scenarios"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| SLURM overhead 0.13 % |"), std::string::npos);
  EXPECT_NE(text.find("not a SLURM run"), std::string::npos);
  EXPECT_NE(text.find("no parameter of dpushard"), std::string::npos);
}

// The regime of the published result: sizes up to 200M fill its rows, the best 3-node
// configuration of 100M and up (a measurement error kept out), with the planner's own
// prediction beside it and the components the figure comes with.
TEST(ReportAnalysis, ThePublishedRowsFillFromSizesUpTo200M) {
  std::vector<testing::SyntheticConfig> configs;
  const std::vector<std::tuple<std::string, double, double, double, double>> sizes = {
      // size, params, 1-node fps, 3-node experts speedup, 3-node replicate speedup
      {"50M", 50.1e6, 10, 2.0, 2.1},
      {"100M", 99.97e6, 5, 2.2, 2.3},
      {"200M", 200.2e6, 2.5, 2.6, 3.3}};  // replicate 110 %: a measurement error
  for (const auto& [size, params, base, experts, replicate] : sizes) {
    configs.push_back({size, params, 1, "single", base});
    configs.push_back({size, params, 3, "experts", base * experts});
    configs.push_back({size, params, 3, "replicate", base * replicate});
  }
  json doc = testing::benchmark_json("cnn", configs, "sim");
  for (auto& b : doc["benchmarks"])
    if (b["run_name"].get<std::string>().find("params:200M/nodes:3/strategy:experts") !=
        std::string::npos) {
      b["node_bytes_per_frame"] = 75264.0;
      b["busiest_node_share"] = 0.343;
      b["node_ms"] = 150.0;
    }
  const auto a = report::analyze(parse(with_scenarios(doc)));
  const std::string text = report::render_published_section(a, std::nullopt);
  EXPECT_NE(text.find("| cnn: 2.60× (200M, experts; modeled; the planner predicts 2.60×) |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| cnn: 87 % (200M, experts; modeled; the planner predicts 87 %) |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cnn (200M, experts): pipelining: 5 frames in flight, so every node works "
                      "on a frame at once; int8 on the wire: 75 kB between nodes per frame (0.60 "
                      "ms at 1 Gbit/s; float32 would be 4× that); the split: the busiest node "
                      "holds 34 % of the compute (33 % is even), which caps efficiency at 97 %; "
                      "the busiest node busy 150.00 ms of each 153.85 ms frame interval; the "
                      "published run's scenario, split and link are unknown"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("throughput (Offline) ≤ 50M (experts)"), std::string::npos) << text;
  // The swept 100M model counts as "above 100M" though its count lands a little under it.
  json no_200m = testing::benchmark_json(
      "cnn", std::vector<testing::SyntheticConfig>(configs.begin(), configs.begin() + 6), "sim");
  const std::string upto_100m = report::render_published_section(
      report::analyze(parse(with_scenarios(no_200m))), std::nullopt);
  EXPECT_NE(upto_100m.find("| cnn: 2.30× (100M, replicate; modeled"), std::string::npos)
      << upto_100m;
}

// The plans' DPU utilization (bench counters from plan.yaml): the model's two shares, each
// fragment's, and the DPU's busy share of the frame period at the measured rate, which is
// the figure the published "86-97 % DPU utilization" is set beside.
TEST(ReportAnalysis, DpuUtilizationPerModelAndFragmentAndThePublishedFigureIsBusyShare) {
  json doc = testing::benchmark_json("convvit", testing::cnn_configs(), "sim");
  for (auto& b : doc["benchmarks"]) {
    const int nodes = b["nodes"].get<int>();
    b["dpu_mac_share"] = 0.98;
    b["dpu_time_share"] = 0.85;
    // One node at 20 fps (10M) with 40 ms of DPU a frame: busy 80 %.
    b["dpu_ms"] = 800.0 / b["fps"].get<double>() * (nodes == 1 ? 1.0 : 0.5 * nodes);
    b["busiest_dpu_ms"] = b["dpu_ms"].get<double>() / nodes * 1.2;
    b["node_ms"] = b["busiest_dpu_ms"].get<double>() + 1.0;
    if (nodes > 1) {
      b["fragment_dpu_mac_share/experts0"] = 0.97;
      b["fragment_dpu_time_share/experts0"] = 0.84;
      b["fragment_dpu_mac_share/stem"] = 1.0;
      b["fragment_dpu_time_share/stem"] = 0.3;
    }
  }
  const auto a = report::analyze(parse(doc));
  const auto& fa = a.families[0];
  const report::Row* r = fa.find("10M", 3, "experts");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->m.fragment_dpu.size(), 2u);
  EXPECT_EQ(r->m.fragment_dpu[0].name, "experts0");
  EXPECT_NEAR(r->m.fragment_dpu[0].time_share, 0.84, 1e-12);
  // 3 nodes: half of one node's DPU time per node, at the measured rate: 40 % each on
  // average, the busiest 1.2x that.
  EXPECT_NEAR(report::dpu_busy_mean(r->m), 0.4, 1e-9);
  EXPECT_NEAR(report::dpu_busy_busiest(r->m), 0.48, 1e-9);
  const std::string section = report::render_dpu_section(fa, true);
  EXPECT_NE(section.find("| 10M | 3 | experts | 98 % | 85 % | 40 % | 48 % | experts0 97 % / 84 "
                         "%; stem 100 % / 30 % |"),
            std::string::npos)
      << section;
  EXPECT_NE(section.find("| 10M | 1 | — | 98 % | 85 % | 80 % | 96 % | — |"), std::string::npos)
      << section;
  // The published row: the range over the multi-node configurations, mean to busiest node
  // (every one of them here: 1 node's 80 % x nodes / 2 / nodes = 40 % mean, 48 % busiest),
  // the model's two shares beside it, and the busiest node's interval split.
  const std::string pub = report::render_published_section(a, std::nullopt);
  EXPECT_NE(pub.find("convvit: DPU busy 40 %-48 % of the frame period (modeled; Offline on 2+ "
                     "nodes"),
            std::string::npos)
      << pub;
  EXPECT_NE(pub.find("the model (10M): 98 % of its MACs, 85 % of a frame's time on the DPU"),
            std::string::npos)
      << pub;
  EXPECT_NE(pub.find("the Vitis AI profiler's \"DPU utilization\""), std::string::npos);
  EXPECT_NE(pub.find("other backend work (CPU ops and host work on the A53) 1.00 ms"),
            std::string::npos)
      << pub;
  // Plans without the figures: said so, not zeros.
  const auto bare =
      report::analyze(parse(testing::benchmark_json("convvit", testing::cnn_configs(), "sim")));
  EXPECT_NE(report::render_dpu_section(bare.families[0], true).find("Not recorded"),
            std::string::npos);
  EXPECT_NE(report::render_published_section(bare, std::nullopt)
                .find("convvit: not recorded (the plans carry no DPU times)"),
            std::string::npos);
}

TEST(ReportAnalysis, TheLinkLabelSaysWhetherItWasEmulated) {
  EXPECT_EQ(report::link_label("paced", "1.000", "0", true), "emulated 1 Gbit/s (paced)");
  EXPECT_EQ(report::link_label("paced", "0.100", "200", true),
            "emulated 0.1 Gbit/s (paced), 200 us one way");
  EXPECT_EQ(report::link_label("off", "1.000", "0", true), "unshaped (loopback)");
  EXPECT_EQ(report::link_label("off", "1.000", "0", false), "unshaped (the real network)");
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

// The suites' hybrid and auto: hybrid on 2 and 3 nodes is not possible (the planner would
// fall back to replicate), auto's plan is the experts row's on 2 nodes (marked in its label,
// not measured twice) and a plan of its own on 3 nodes (measured as strategy auto).
json with_hybrid_and_auto() {
  auto configs = testing::cnn_configs();
  const std::vector<std::pair<std::string, double>> sizes = {
      {"2M", 2.01e6}, {"5M", 4.98e6}, {"10M", 10.2e6}};
  const std::vector<double> base = {100, 50, 20};
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (int n : {2, 3}) configs.push_back({sizes[i].first, sizes[i].second, n, "hybrid", 1});
    configs.push_back({sizes[i].first, sizes[i].second, 3, "auto", base[i] * 2.95});
  }
  json doc = testing::benchmark_json("cnn", configs, "sim");
  doc["context"]["objective"] = "throughput";
  for (auto& e : doc["benchmarks"]) {
    const std::string name = e["run_name"];
    if (name.find("strategy:hybrid") != std::string::npos) {
      e["error_occurred"] = true;
      e["error_message"] =
          "not possible: hybrid is not possible: needs at least 4 nodes; using replicate";
      e["label"] = "replicate";
    } else if (name.find("nodes:2/strategy:experts") != std::string::npos) {
      e["label"] = "experts [planner's choice]";
    } else if (name.find("nodes:3/strategy:auto") != std::string::npos) {
      e["label"] = "pipeline [planner's choice]";
    }
  }
  return doc;
}

TEST(ReportAnalysis, HybridAndAutoStandBesideTheOthersWithThePlannersChoiceMarked) {
  const auto r = parse(with_hybrid_and_auto());
  const auto a = report::analyze(r);
  EXPECT_TRUE(a.failed.empty()) << "a strategy that does not exist is no failure";
  EXPECT_EQ(a.objective, "throughput");
  const auto& fa = a.families[0];
  EXPECT_EQ((fa.strategies),
            (std::vector<std::string>{"experts", "pipeline", "replicate", "hybrid", "auto"}));
  EXPECT_EQ(find(fa.throughput_break_even, 2, "hybrid").kind, BreakEven::Kind::NotPossible);
  EXPECT_EQ(find(fa.throughput_break_even, 3, "hybrid").kind, BreakEven::Kind::NotPossible);
  EXPECT_EQ(find(fa.throughput_break_even, 3, "auto").kind, BreakEven::Kind::Always);

  const report::Row* hybrid = fa.find("10M", 3, "hybrid");
  ASSERT_NE(hybrid, nullptr);
  EXPECT_TRUE(hybrid->m.not_possible);
  EXPECT_EQ(hybrid->m.error, "hybrid is not possible: needs at least 4 nodes; using replicate");
  const report::Row* experts = fa.find("10M", 2, "experts");
  ASSERT_NE(experts, nullptr);
  EXPECT_TRUE(experts->m.planner_choice);
  EXPECT_EQ(experts->m.plan_label, "experts");
  EXPECT_NEAR(experts->vs_replicate, 1.5 / 1.9, 1e-9);  // fps over replicate's on 2 nodes
  const report::Row* chosen = fa.find("10M", 3, "auto");
  ASSERT_NE(chosen, nullptr);
  EXPECT_TRUE(chosen->m.planner_choice);
  EXPECT_EQ(chosen->m.plan_label, "pipeline");
  EXPECT_NEAR(chosen->speedup, 2.95, 1e-9);
  EXPECT_NEAR(chosen->vs_replicate, 2.95 / 2.9, 1e-9);
  EXPECT_FALSE(fa.find("10M", 3, "pipeline")->m.planner_choice);

  const std::string md = report::render_markdown(r, a, {false, "test"});
  EXPECT_NE(md.find("| 2 | 5M (1.20×) | > 10M (0.90× at 10M) | ≤ 2M (1.90×) | not possible | — |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### Strategies against one board and against replicate"), std::string::npos);
  EXPECT_NE(md.find("| 10M | 2 | experts ★ | 30.0 | 1.50× | 75 % | 0.79× |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| 10M | 3 | auto: pipeline ★ | 59.0 | 2.95× | 98 % | 1.02× |"),
            std::string::npos)
      << md;
  // Not possible: one short cell with a footnote mark, its reason once under the table.
  EXPECT_NE(md.find("| 10M | 3 | hybrid | not possible¹ |"), std::string::npos) << md;
  EXPECT_NE(md.find("¹ Not possible: hybrid is not possible: needs at least 4 nodes"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("| not possible: hybrid"), std::string::npos) << md;
  EXPECT_NE(md.find("- 10M on 2 nodes: the planner picks experts (30.0 fps, 1.50×); highest "
                    "throughput measured: replicate (38.0 fps, 1.90×)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- 10M on 3 nodes: the planner picks pipeline (59.0 fps, 2.95×), the highest "
                    "throughput measured"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(" 1.50× (75 %) ★ |"), std::string::npos) << md;  // the speedup matrix
  EXPECT_EQ(md.find("## Failed configurations"), std::string::npos);
}

// A wide node count swept for a subset (the local inventory's 4 nodes: the suites'
// --node-strategies 4=hybrid,replicate,auto --node-sizes 4=5M,10M): 1 to 3 nodes as in
// cnn_configs (auto's plan the experts row's), 4 nodes only replicate, a 2x experts hybrid
// and auto (a 4-node experts plan of its own) at 5M and 10M.
json with_four_nodes_for_a_subset() {
  auto configs = testing::cnn_configs();
  for (const auto& [size, params] :
       std::vector<std::pair<std::string, double>>{{"2M", 2.01e6}, {"5M", 4.98e6}, {"10M", 10.2e6}})
    for (int n : {2, 3}) configs.push_back({size, params, n, "hybrid", 1});
  configs.push_back({"5M", 4.98e6, 4, "replicate", 195});
  configs.push_back({"5M", 4.98e6, 4, "hybrid", 150});
  configs.push_back({"5M", 4.98e6, 4, "auto", 120});
  configs.push_back({"10M", 10.2e6, 4, "replicate", 78});
  configs.push_back({"10M", 10.2e6, 4, "hybrid", 64});
  configs.push_back({"10M", 10.2e6, 4, "auto", 52});
  json doc = testing::benchmark_json("cnn", configs, "sim");
  doc["context"]["node_strategies"] = "4=hybrid,replicate,auto";
  doc["context"]["node_sizes"] = "4=5M,10M";
  for (auto& e : doc["benchmarks"]) {
    const std::string name = e["run_name"];
    if (name.find("nodes:4/strategy:hybrid") != std::string::npos) {
      e["label"] = "hybrid 2x experts";
    } else if (name.find("strategy:hybrid") != std::string::npos) {
      e["error_occurred"] = true;  // on 2 and 3 nodes, as the suites report it
      e["error_message"] =
          "not possible: hybrid is not possible: needs at least 2 replicas of at least 2 nodes "
          "each; 3 nodes are too few; using replicate";
      e["label"] = "replicate";
    } else if (name.find("nodes:4/strategy:auto") != std::string::npos ||
               name.find("nodes:2/strategy:experts") != std::string::npos ||
               name.find("nodes:3/strategy:experts") != std::string::npos) {
      e["label"] = "experts [planner's choice]";
    }
  }
  return doc;
}

TEST(ReportAnalysis, AWideNodeCountSweptForASubsetShowsItsRowsBesideTheOthers) {
  const auto r = parse(with_four_nodes_for_a_subset());
  const auto a = report::analyze(r);
  EXPECT_TRUE(a.failed.empty()) << "a strategy that does not exist is no failure";
  const auto& fa = a.families[0];
  EXPECT_EQ(fa.node_counts, (std::vector<int>{1, 2, 3, 4}));
  // Break-evens only for what was swept on 4 nodes; 1 to 3 nodes as without the 4th.
  EXPECT_EQ(find(fa.throughput_break_even, 4, "replicate").kind, BreakEven::Kind::Always);
  EXPECT_EQ(find(fa.throughput_break_even, 4, "hybrid").size.label, "5M");
  EXPECT_THROW(find(fa.throughput_break_even, 4, "experts"), std::runtime_error);
  EXPECT_EQ(find(fa.throughput_break_even, 2, "experts").kind, BreakEven::Kind::From);
  const report::Row* hybrid = fa.find("10M", 4, "hybrid");
  ASSERT_NE(hybrid, nullptr);
  EXPECT_NEAR(hybrid->speedup, 64.0 / 20, 1e-9);
  EXPECT_NEAR(hybrid->efficiency, 64.0 / 20 / 4, 1e-9);
  EXPECT_NEAR(hybrid->vs_replicate, 64.0 / 78, 1e-9);
  EXPECT_EQ(fa.find("2M", 4, "replicate"), nullptr);

  const std::string md = report::render_markdown(r, a, {false, "test"});
  // The break-even tables: 4 nodes' row says what was not swept; 2 and 3 nodes unchanged
  // (auto's plan was the experts row's there: swept, no row of its own).
  EXPECT_NE(md.find("| nodes | experts | pipeline | replicate (data-parallel baseline) | hybrid | "
                    "auto |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 2 | 5M (1.20×) | > 10M (0.90× at 10M) | ≤ 2M (1.90×) | not possible | — |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 4 | not swept | not swept | ≤ 5M (3.90×) | ≤ 5M (3.00×) | ≤ 5M (2.40×) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("On 4 nodes only replicate, hybrid and auto were swept, at 5M and 10M (its "
                    "`≤ S` is the smallest of these)."),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("On 2 nodes only"), std::string::npos) << md;
  // The speedup matrix: columns for what 4 nodes swept only, — at the sizes it did not.
  EXPECT_NE(md.find("| 3× hybrid | 4× replicate | 4× hybrid | 4× auto |\n"), std::string::npos)
      << md;
  EXPECT_EQ(md.find("4× experts"), std::string::npos) << md;
  EXPECT_NE(md.find("On 4 nodes only replicate, hybrid and auto were swept, at 5M and 10M. "
                    "—: not measured."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(" 3.90× (98 %) | 3.20× (80 %) | 2.60× (65 %) ★ |\n"), std::string::npos) << md;
  // Against one board and against replicate on as many nodes, the planner's choice marked.
  EXPECT_NE(md.find("| 10M | 4 | hybrid 2x experts | 64.0 | 3.20× | 80 % | 0.82× |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 10M | 4 | auto: experts ★ | 52.0 | 2.60× | 65 % | 0.67× |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 10M | 4 | replicate | 78.0 | 3.90× | 98 % | 1.00× |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("- 10M on 4 nodes: the planner picks experts (52.0 fps, 2.60×); highest "
                    "throughput measured: replicate (78.0 fps, 3.90×)"),
            std::string::npos)
      << md;
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

// The ConvViT's two variants (docs/zoo.md): the gated one is said to run on the DPU, and the
// softmax one's rows (family convvit-softmax, the sweep's contrast) say what they measure.
TEST(ReportCli, TheSoftmaxConvVitIsShownAsTheContrastRows) {
  TempDir dir;
  write_run(dir, "sim");
  auto softmax = testing::cnn_configs();
  for (auto& c : softmax) c.fps *= 0.05;
  testing::write_json(dir / "bench_convvit-softmax_scaling.json",
                      testing::benchmark_json("convvit-softmax", softmax, "sim"));
  const Cli r = run_cli(dir, "report " + quoted(dir.path().string()) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = testing::read_file(dir / "report.md");
  const auto gated = md.find("## convvit\n\nThe ConvViT with gated attention");
  const auto contrast = md.find(
      "## convvit-softmax\n\n**Contrast rows: a transformer with softmax attention on the A53**");
  EXPECT_NE(gated, std::string::npos) << md;
  EXPECT_NE(contrast, std::string::npos) << md;
  EXPECT_EQ(md.find("## cnn\n\nThe ConvViT"), std::string::npos) << md;
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
  EXPECT_NE(md.find("| 2 | 5M (1.20×) | > 10M (0.90× at 10M) | ≤ 2M (1.90×) |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("replicate (data-parallel baseline)"), std::string::npos);
  EXPECT_NE(md.find("| head node | controller (box): Test CPU, 2 cores"), std::string::npos) << md;
  EXPECT_NE(md.find("![cnn speedup](plots/cnn_speedup.png)"), std::string::npos);
  EXPECT_NE(md.find("*Throughput speedup over one node"), std::string::npos);
  EXPECT_NE(md.find("Modeled (sim backend"), std::string::npos) << md;
  // The busiest node's share of the predicted compute, beside the measured bytes.
  EXPECT_NE(md.find("| busiest node | node ms/frame (plan) |"), std::string::npos) << md;
  EXPECT_NE(md.find(" | 47 % | — | — | — | 400 kB | "), std::string::npos) << md;
  // The link as the suites ran it, in the run table and in every caption.
  EXPECT_NE(md.find("| link | emulated 1 Gbit/s (paced) |"), std::string::npos) << md;
  EXPECT_NE(md.find("; link emulated 1 Gbit/s (paced)).*"), std::string::npos) << md;
  // Predicted next to measured, with their ratio (the synthetic prediction is 5 % high).
  EXPECT_NE(md.find("### Predicted and measured"), std::string::npos) << md;
  EXPECT_NE(md.find("| 10M | 1 | single | 21.0 | 20.0 | 0.95 | — |"), std::string::npos) << md;

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
  EXPECT_EQ(summary["families"][0]["break_even_throughput"][0]["answer"], "5M");
}

TEST(ReportCli, MinimumGainIsAnOptionAndTheReportStatesIt) {
  TempDir dir;
  write_run(dir, "sim");
  const Cli r =
      run_cli(dir, "report " + quoted(dir.path().string()) + " --no-plots --json --min-gain 0.1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["min_gain"], 0.1);
  const std::string md = testing::read_file(dir / "report.md");
  EXPECT_NE(md.find("beat one node at every larger size measured by more than 10 %"),
            std::string::npos);
  EXPECT_NE(md.find("lies above 1.10×"), std::string::npos);

  // The noise margin too: stated in the report and the summary.
  const Cli narrow = run_cli(
      dir, "report " + quoted(dir.path().string()) + " --no-plots --json --noise-margin 0.02");
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  EXPECT_EQ(json::parse(narrow.out)["noise_margin"], 0.02);
  EXPECT_NE(testing::read_file(dir / "report.md").find("lie within 2 % of the threshold"),
            std::string::npos);
  const Cli wide =
      run_cli(dir, "report " + quoted(dir.path().string()) + " --no-plots --noise-margin 0.6");
  EXPECT_EQ(wide.exit_code, 2) << wide.err;

  const Cli bad = run_cli(dir, "report " + quoted(dir.path().string()) + " --min-gain 1.5");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--min-gain"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
}

TEST(ReportAnalysis, ABusyMachineIsNamedAtTheTopOfTheReport) {
  json doc = testing::benchmark_json("cnn", testing::cnn_configs(), "sim");
  doc["context"]["load_avg"] = {1.5, 1.2, 1.0};
  const auto quiet = parse(doc);
  const auto qa = report::analyze(quiet);
  ASSERT_EQ(qa.loads.size(), 1u);
  EXPECT_DOUBLE_EQ(qa.loads[0].load, 1.5);
  EXPECT_EQ(qa.loads[0].cpus, 2);
  EXPECT_FALSE(qa.loads[0].busy());
  std::string md = report::render_markdown(quiet, qa, {});
  EXPECT_NE(
      md.find("| load average when each suite started | bench_cnn_scaling.json 1.50 on 2 CPUs |"),
      std::string::npos);
  EXPECT_EQ(md.find("The machine was busy"), std::string::npos);

  doc["context"]["load_avg"] = {23.47, 20.9, 19.2};
  const auto busy = parse(doc);
  md = report::render_markdown(busy, report::analyze(busy), {});
  EXPECT_NE(md.find("⚠ **The machine was busy**: load average 23.5 on 2 CPUs"), std::string::npos);
  EXPECT_NE(md.find("23.47 on 2 CPUs ⚠ busy"), std::string::npos);

  // A suite that did not record its load has none to report, and no warning.
  doc["context"].erase("load_avg");
  const auto unknown = parse(doc);
  md = report::render_markdown(unknown, report::analyze(unknown), {});
  EXPECT_EQ(md.find("load average"), std::string::npos);
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

// scripts/node_loss_bench.py --results-dir writes node_loss.json into the run folder: the
// report gets a "Node loss and return" section before "## Files" (and its summary the goals);
// without the file there is none. The section itself: tests/harness/test_node_loss_section.cpp.
TEST(ReportCli, ANodeLossBenchmarkInTheRunFolderGetsItsSectionAndNoneWithoutIt) {
  TempDir dir;
  write_run(dir, "sim");
  Cli r = run_cli(dir, "report " + quoted(dir.path().string()) + " --no-plots --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::read_file(dir / "report.md").find("Node loss"), std::string::npos);
  EXPECT_FALSE(json::parse(r.out).contains("node_loss"));

  const json loss = {{"kind", "loss"},
                     {"node", "w1"},
                     {"cause", "connection lost: connection closed by the peer"},
                     {"detected_s", 4.0},
                     {"detected_after_fault_s", 0.01},
                     {"upload_s", 0.0},
                     {"first_frame_s", 0.1},
                     {"frames_resent", 8},
                     {"plan_after", "replicate"},
                     {"nodes_after", {"w0", "w2"}},
                     {"fps_before", 200.0},
                     {"fps_during", 5.0},
                     {"fps_after", 139.0},
                     {"predicted_fps_after", 140.0}};
  testing::write_json(dir / "node_loss.json",
                      {{"command", "scripts/node_loss_bench.py --results-dir DIR"},
                       {"frames", 2000},
                       {"inflight", 8},
                       {"runs",
                        {{{"nodes", 3},
                          {"plan", "replicate"},
                          {"predicted_fps", 210.0},
                          {"complete", true},
                          {"frames", 2000},
                          {"frames_delivered", 2000},
                          {"in_order", true},
                          {"frames_resent", 8},
                          {"events", {loss}}}}}});
  r = run_cli(dir, "report " + quoted(dir.path().string()) + " --no-plots --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = testing::read_file(dir / "report.md");
  const auto section = md.find("\n## Node loss and return\n");
  ASSERT_NE(section, std::string::npos) << md;
  EXPECT_LT(section, md.find("\n## Files\n")) << md;
  EXPECT_NE(md.find("| 3 | replicate → replicate on w0, w2 | loss of w1: "), std::string::npos)
      << md;
  const json summary = json::parse(r.out);
  EXPECT_EQ(summary["node_loss"]["runs"], 1);
  EXPECT_EQ(summary["node_loss"]["events"], 1);
  EXPECT_EQ(summary["node_loss"]["goals_met"], true);

  // A broken file is one error line naming it.
  std::ofstream(dir / "node_loss.json") << "{\"runs\": 1}";
  r = run_cli(dir, "report " + quoted(dir.path().string()) + " --no-plots");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("node_loss.json: no \"runs\" array"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
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
