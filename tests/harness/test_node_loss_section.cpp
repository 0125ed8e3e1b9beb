// The report's "Node loss and return" section (tools/report/node_loss_section.hpp) on a
// synthetic node_loss.json as scripts/node_loss_bench.py --results-dir writes it: the rows,
// the frames' accounting, the goals met and missed, no file, and malformed files.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "dpushard/base/error.hpp"
#include "report/node_loss_section.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(testing::TempDir()) / ("node_loss_section_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// A 3-node replicate run whose worker w1 was killed (a loss recovered in 0.152 s, 0.016 s of
// it the upload, the survivors on an experts plan at 0.913 of its prediction) and then came
// back (a return to replicate).
json three_node_run() {
  return {{"nodes", 3},
          {"plan", "replicate"},
          {"predicted_fps", 211.8},
          {"complete", true},
          {"frames", 2000},
          {"frames_delivered", 2000},
          {"frames_lost", 0},
          {"frames_duplicated", 0},
          {"in_order", true},
          {"frames_resent", 8},
          {"stale_messages_dropped", 5},
          {"events",
           {{{"kind", "loss"},
             {"node", "w1"},
             {"cause", "connection lost: connection closed by the peer"},
             {"detected_s", 5.21},
             {"detected_after_fault_s", 0.055},
             {"plan_ms", 0.2},
             {"upload_s", 0.016},
             {"upload_bytes", 0},
             {"switch_s", 0.05},
             {"first_frame_s", 0.152},
             {"outage_s", 0.2},
             {"frames_resent", 8},
             {"plan_after", "experts"},
             {"nodes_after", {"w0", "w2"}},
             {"fps_before", 195.9},
             {"fps_during", 6.6},
             {"fps_after", 128.9},
             {"predicted_fps_after", 141.2}},
            {{"kind", "return"},
             {"node", "w1"},
             {"cause", "answered a new HELLO at 127.0.0.12:4000"},
             {"detected_s", 8.5},
             {"upload_s", 0},
             {"upload_bytes", 0},
             {"first_frame_s", 0.03},
             {"frames_resent", 0},
             {"plan_after", "replicate"},
             {"nodes_after", {"w0", "w1", "w2"}},
             {"fps_before", 128.0},
             {"fps_during", 10.0},
             {"fps_after", 200.0},
             {"predicted_fps_after", 211.8}}}}};
}

json benchmark(const json& runs) {
  return {{"command", "scripts/node_loss_bench.py --results-dir results/x"},
          {"revision", "abc1234"},
          {"date_utc", "2026-12-05T10:00:00Z"},
          {"model", "20M CNN"},
          {"workers", "sim (kv260)"},
          {"link", "1 Gbit/s, paced"},
          {"objective", "throughput"},
          {"frames", 2000},
          {"inflight", 8},
          {"peer_timeout_s", 1.0},
          {"load_average_start", 6.5},
          {"load_average_end", 7.3},
          {"runs", runs}};
}

TEST(NodeLossSection, EveryEventIsARowAndTheGoalsAreJudged) {
  const fs::path dir = fresh_dir("rows");
  write(dir / "node_loss.json", benchmark(json::array({three_node_run()})).dump());
  const auto b = report::read_node_loss(dir);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->runs.size(), 1u);
  ASSERT_EQ(b->runs[0].events.size(), 2u);
  EXPECT_NEAR(b->runs[0].events[0].first_frame_without_upload_s(), 0.136, 1e-9);
  EXPECT_NEAR(b->runs[0].events[0].after_vs_predicted(), 128.9 / 141.2, 1e-9);
  EXPECT_TRUE(report::node_loss_goals_met(*b));

  const std::string md = report::render_node_loss_section(*b);
  EXPECT_EQ(md.rfind("## Node loss and return\n\n", 0), 0u) << md;
  EXPECT_NE(md.find("load average 6.5 at the start, 7.3 at the end"), std::string::npos) << md;
  EXPECT_NE(md.find("Revision `abc1234`"), std::string::npos) << md;
  EXPECT_NE(md.find("```\nscripts/node_loss_bench.py --results-dir results/x\n```"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 3 | replicate → experts on w0, w2 | loss of w1: connection lost: "
                    "connection closed by the peer | 55 ms after the kill, t = 5.21 s | 0.152 s "
                    "(0.136 s) | 0.016 s, 0.0 MB | 8 | 195.9 / 6.6 / 128.9 | 0.913× of 141.2 |"),
            std::string::npos)
      << md;
  // A return switches from the plan the loss switched to.
  EXPECT_NE(md.find("| 3 | experts → replicate on w0, w1, w2 | return of w1: answered a new "
                    "HELLO at 127.0.0.12:4000 | t = 8.50 s | 0.030 s (0.030 s) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 3 | 211.8 | yes | 2000 of 2000 | 0 | 0 | yes | 8 | 5 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("upload excluded: **met** (at most 0.136 s)"), std::string::npos) << md;
  EXPECT_NE(md.find("prediction: **met**"), std::string::npos) << md;
  EXPECT_NE(md.find("exactly once and in order: **met**"), std::string::npos) << md;
  EXPECT_NE(md.find("The workers are `sim`"), std::string::npos) << md;
}

TEST(NodeLossSection, ASlowSwitchAShortfallAndALostFrameAreNotMet) {
  json slow = three_node_run();
  slow["events"][0]["first_frame_s"] = 3.5;  // 3.484 s without the upload
  slow["events"][0]["fps_after"] = 100.0;    // 0.708 of the prediction
  json lossy = three_node_run();
  lossy["nodes"] = 4;
  lossy["complete"] = false;
  lossy["error"] = "12 frames could not be served: no_plan: no plan | fits";
  lossy["frames_delivered"] = 1988;
  lossy["frames_lost"] = 12;
  lossy["frames_duplicated"] = 1;
  const fs::path dir = fresh_dir("missed");
  write(dir / "node_loss.json", benchmark(json::array({slow, lossy})).dump());
  const auto b = report::read_node_loss(dir);
  ASSERT_TRUE(b);
  EXPECT_FALSE(report::node_loss_goals_met(*b));
  const std::string md = report::render_node_loss_section(*b);
  EXPECT_NE(md.find("upload excluded: **not met** (at most 3.484 s)"), std::string::npos) << md;
  EXPECT_NE(md.find("prediction: **not met**"), std::string::npos) << md;
  EXPECT_NE(md.find("exactly once and in order: **not met**"), std::string::npos) << md;
  // The error's '|' is escaped: the row keeps its cells.
  EXPECT_NE(md.find("| 4 | 211.8 | no: 12 frames could not be served: no_plan: no plan \\| fits | "
                    "1988 of 2000 | 12 | 1 | yes |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("0.708× of 141.2"), std::string::npos) << md;
}

TEST(NodeLossSection, ARunWithoutEventsSaysSoAndMissesTheGoals) {
  json quiet = three_node_run();
  quiet["events"] = json::array();
  const fs::path dir = fresh_dir("quiet");
  write(dir / "node_loss.json", benchmark(json::array({quiet})).dump());
  const auto b = report::read_node_loss(dir);
  ASSERT_TRUE(b);
  const std::string md = report::render_node_loss_section(*b);
  EXPECT_NE(md.find("| 3 | replicate | none recorded |"), std::string::npos) << md;
  EXPECT_NE(md.find("upload excluded: no loss recorded"), std::string::npos) << md;
}

TEST(NodeLossSection, NoFileIsNoSection) {
  EXPECT_FALSE(report::read_node_loss(fresh_dir("none")));
}

TEST(NodeLossSection, AMalformedFileIsNamed) {
  const fs::path dir = fresh_dir("malformed");
  const std::string file = (dir / "node_loss.json").string();
  auto error_of = [&](const std::string& text) {
    write(dir / "node_loss.json", text);
    try {
      report::read_node_loss(dir);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("{").rfind(file + ": not JSON: ", 0), 0u);
  EXPECT_EQ(error_of("{\"runs\": 3}"), file + ": no \"runs\" array");
  EXPECT_EQ(error_of("{\"runs\": [{\"plan\": \"x\"}]}"), file + ": runs[0]: no \"nodes\" count");
  EXPECT_EQ(error_of("{\"runs\": [{\"nodes\": 3, \"events\": {}}]}"),
            file + ": runs[0]: \"events\" is not an array");
  EXPECT_EQ(error_of("{\"runs\": [{\"nodes\": 3, \"events\": [1]}]}"),
            file + ": runs[0]: an event is not an object");
}

}  // namespace
}  // namespace dpushard
