#pragma once
// The report's SLURM section, for a sweep run as one SLURM batch job (dpushard_scheduler:
// slurm): what SLURM cost around the suites. Read from the run folder: slurm.json (the
// sweep role: job id, submission time, the job script's timeline with sub-second times)
// and slurm-sacct.txt (`sacct --parsable2` of the job, whole seconds). Optionally a direct
// run of the same sweep (its sweep-timeline.json) to compare the suites' wall time.

#include <filesystem>
#include <optional>
#include <string>

namespace dpushard::report {

// A duration in seconds; nullopt when the run folder does not give it.
using Seconds = std::optional<double>;

struct SlurmOverhead {
  std::string job_id;
  std::string state;      // the job's sacct State
  std::string node_list;  // the job's sacct NodeList
  std::string alloc_tres;
  int nodes = 0;
  int time_limit_minutes = 0;
  double expected_suite_seconds = 0;

  // From the job script's timeline (date +%s.%N) and the submission time.
  Seconds submit_to_start;  // sbatch called until the job script's first line
  Seconds step_launch;      // srun called until the last worker task started
  Seconds workers_ready;    // srun called until every worker listened (worker start included)
  Seconds teardown;         // SIGINT to the worker step until srun returned
  Seconds suites;           // the suites' wall time: first suite started to last ended
  Seconds job_script;       // sbatch called until the job script's last line

  // From sacct (whole seconds).
  Seconds sacct_queue;        // job Start - Submit
  Seconds sacct_step_launch;  // worker step Start - job Start
  Seconds sacct_step_end;     // job End - worker step End
  Seconds sacct_job_elapsed;  // job End - Start

  // SLURM's fixed cost per job: submit_to_start + step_launch + teardown, and its share of
  // the suites' wall time in percent.
  Seconds fixed_cost() const;
  Seconds overhead_percent() const;
};

// The suites' wall time of a direct run (sweep-timeline.json), to compare.
struct DirectBaseline {
  std::string run;  // its folder name
  double suites = 0;
};

// Reads a run folder's slurm.json and slurm-sacct.txt; nullopt when there is no slurm.json
// (a direct run). Throws dpushard::Error naming the file when one is malformed.
std::optional<SlurmOverhead> read_slurm_overhead(const std::filesystem::path& run_dir);

// Reads DIR/sweep-timeline.json of a direct run; throws dpushard::Error when it is missing
// or malformed.
DirectBaseline read_direct_baseline(const std::filesystem::path& run_dir);

// "## SLURM" and its tables.
std::string render_slurm_section(const SlurmOverhead& o,
                                 const std::optional<DirectBaseline>& baseline);

// Parses one `sacct --parsable2` timestamp (2026-12-03T14:36:36) into seconds since an
// arbitrary epoch (differences only); nullopt for Unknown/None/empty. Exposed for tests.
Seconds parse_sacct_time(const std::string& text);

}  // namespace dpushard::report
