// The report's SLURM section (tools/report/slurm_section.hpp) on a synthetic run folder:
// slurm.json with the job script's timeline, slurm-sacct.txt as `sacct --parsable2` writes
// it, a direct run's sweep-timeline.json, and malformed files.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "dpushard/base/error.hpp"
#include "report/slurm_section.hpp"

namespace dpushard {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(testing::TempDir()) / ("slurm_section_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

// A 15-minute sweep: submitted at 1000.0, the job script ran at 1000.4, srun at 1000.5,
// the last worker task at 1000.7, the suites from 1001.0 to 1901.0, the workers stopped
// from 1901.1 to 1901.4.
const char* kSlurmJson = R"({
  "job_id": 42, "partition": "kv260", "gres": "fpga:kv260", "nodes": 3,
  "time_limit_minutes": 40, "expected_suite_seconds": "880.5", "submitted": "1000.0",
  "sacct_file": "slurm-sacct.txt",
  "timeline": {"scheduler": "slurm", "job_start": 1000.4, "workers_launch": 1000.5,
               "workers_started_first": 1000.6, "workers_started_last": 1000.7,
               "workers_ready": 1000.9, "suites_start": 1001.0, "suites_end": 1901.0,
               "workers_stop": 1901.1, "workers_stopped": 1901.4, "status": 0,
               "job_script_end": 1901.5}
})";

const char* kSacct =
    "JobID|JobName|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|NodeList|AllocTRES|"
    "Reason\n"
    "42|dpushard-run|COMPLETED|0:0|2026-12-03T14:00:00|2026-12-03T14:00:00|2026-12-03T14:00:01|"
    "2026-12-03T14:15:02|00:15:01|3|kv260-[1-3]|billing=3,cpu=3,gres/fpga:kv260=3,node=3|None\n"
    "42.batch|batch|COMPLETED|0:0|2026-12-03T14:00:01|2026-12-03T14:00:01|2026-12-03T14:00:01|"
    "2026-12-03T14:15:02|00:15:01|1|kv260-1|cpu=1,gres/fpga:kv260=1,mem=0,node=1|\n"
    "42.0|dpushard-workers|COMPLETED|0:0|2026-12-03T14:00:01|2026-12-03T14:00:01|"
    "2026-12-03T14:00:02|2026-12-03T14:15:02|00:15:00|3|kv260-[1-3]|cpu=3,gres/fpga:kv260=3,"
    "mem=0,node=3|\n";

TEST(SlurmSection, SacctTimesDifferInSeconds) {
  const auto a = report::parse_sacct_time("2026-12-03T14:00:01");
  const auto b = report::parse_sacct_time("2026-12-03T14:15:02");
  ASSERT_TRUE(a && b);
  EXPECT_DOUBLE_EQ(*b - *a, 901.0);
  EXPECT_FALSE(report::parse_sacct_time("Unknown"));
  EXPECT_FALSE(report::parse_sacct_time(""));
}

TEST(SlurmSection, ADirectRunHasNone) {
  EXPECT_FALSE(report::read_slurm_overhead(fresh_dir("direct")));
}

TEST(SlurmSection, FixedCostAndShareOfTheSweep) {
  const auto dir = fresh_dir("job");
  write(dir / "slurm.json", kSlurmJson);
  write(dir / "slurm-sacct.txt", kSacct);
  const auto o = report::read_slurm_overhead(dir);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->job_id, "42");
  EXPECT_EQ(o->state, "COMPLETED");
  EXPECT_EQ(o->node_list, "kv260-[1-3]");
  EXPECT_EQ(o->nodes, 3);
  EXPECT_NEAR(o->expected_suite_seconds, 880.5, 1e-9);
  EXPECT_NEAR(*o->submit_to_start, 0.4, 1e-6);
  EXPECT_NEAR(*o->step_launch, 0.2, 1e-6);
  EXPECT_NEAR(*o->workers_ready, 0.4, 1e-6);
  EXPECT_NEAR(*o->teardown, 0.3, 1e-6);
  EXPECT_NEAR(*o->suites, 900.0, 1e-6);
  EXPECT_NEAR(*o->fixed_cost(), 0.9, 1e-6);
  EXPECT_NEAR(*o->overhead_percent(), 0.1, 1e-6);
  EXPECT_DOUBLE_EQ(*o->sacct_queue, 1.0);
  EXPECT_DOUBLE_EQ(*o->sacct_step_launch, 1.0);
  EXPECT_DOUBLE_EQ(*o->sacct_step_end, 0.0);
  EXPECT_DOUBLE_EQ(*o->sacct_job_elapsed, 901.0);

  const auto md = report::render_slurm_section(*o, std::nullopt);
  EXPECT_NE(md.find("## SLURM"), std::string::npos) << md;
  EXPECT_NE(md.find("| **fixed cost per job** | **0.90 s** |"), std::string::npos) << md;
  EXPECT_NE(md.find("**0.100 %**"), std::string::npos) << md;
  EXPECT_NE(md.find("(15.0 min)"), std::string::npos) << md;
  EXPECT_NE(md.find("**met**"), std::string::npos) << md;
}

TEST(SlurmSection, ComparesWithADirectRun) {
  const auto dir = fresh_dir("compare");
  write(dir / "slurm.json", kSlurmJson);
  write(dir / "slurm-sacct.txt", kSacct);
  const auto direct = fresh_dir("direct_run");
  write(direct / "sweep-timeline.json",
        R"({"scheduler": "direct", "suites_start": 5.0, "suites_end": 903.5})");
  const auto baseline = report::read_direct_baseline(direct);
  EXPECT_NEAR(baseline.suites, 898.5, 1e-9);
  const auto md = report::render_slurm_section(*report::read_slurm_overhead(dir), baseline);
  EXPECT_NE(md.find("slurm_section_direct_run"), std::string::npos) << md;
  EXPECT_NE(md.find("| suites' wall time, SLURM − direct | 1.5 s |"), std::string::npos) << md;
}

TEST(SlurmSection, AShortSweepIsNotJudged) {
  const auto dir = fresh_dir("short");
  std::string json = kSlurmJson;
  json.replace(json.find("1901.0"), 6, "1031.0");
  write(dir / "slurm.json", json);
  const auto o = report::read_slurm_overhead(dir);
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->sacct_queue);  // no slurm-sacct.txt
  EXPECT_NE(report::render_slurm_section(*o, std::nullopt).find("not judged"), std::string::npos);
}

TEST(SlurmSection, BadFilesNameTheFile) {
  const auto dir = fresh_dir("bad");
  write(dir / "slurm.json", "{not json");
  try {
    report::read_slurm_overhead(dir);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slurm.json"), std::string::npos) << e.what();
  }
  write(dir / "slurm.json", kSlurmJson);
  write(dir / "slurm-sacct.txt", "JobID|State\n42|COMPLETED|extra\n");
  EXPECT_THROW(report::read_slurm_overhead(dir), Error);
  write(dir / "slurm-sacct.txt", "JobID|State\n41|COMPLETED\n");
  EXPECT_THROW(report::read_slurm_overhead(dir), Error);
  EXPECT_THROW(report::read_direct_baseline(dir), Error);  // no sweep-timeline.json
}

}  // namespace
}  // namespace dpushard
