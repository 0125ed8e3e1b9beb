#include "slurm_section.hpp"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpushard/base/error.hpp"

namespace dpushard::report {
namespace {

using nlohmann::json;

// The target the issue set: SLURM's cost below 0.13 % of a sweep of 10 minutes or more.
constexpr double kTargetPercent = 0.13;
constexpr double kTargetSweepSeconds = 600;

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot read it");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not JSON: " + e.what());
  }
}

// A number that Ansible may have written as a string.
std::optional<double> number(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return std::nullopt;
  const json& v = j[key];
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    try {
      std::size_t used = 0;
      const double d = std::stod(v.get<std::string>(), &used);
      if (used == v.get<std::string>().size()) return d;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

std::string text(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

Seconds between(const std::optional<double>& from, const std::optional<double>& to) {
  if (!from || !to) return std::nullopt;
  return *to - *from;
}

// sacct --parsable2: a header line, then one '|'-separated line per job and step.
using SacctRow = std::map<std::string, std::string>;

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::stringstream stream(line);
  while (std::getline(stream, field, sep)) out.push_back(field);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

std::vector<SacctRow> read_sacct(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot read it");
  std::string line;
  if (!std::getline(in, line)) throw Error(path.string() + ": empty (no sacct header)");
  const auto header = split(line, '|');
  std::vector<SacctRow> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto fields = split(line, '|');
    if (fields.size() != header.size())
      throw Error(path.string() + ": a line has " + std::to_string(fields.size()) +
                  " fields, the header " + std::to_string(header.size()));
    SacctRow row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string get(const SacctRow& row, const char* key) {
  const auto it = row.find(key);
  return it == row.end() ? "" : it->second;
}

std::string secs(const Seconds& s, int decimals = 2) {
  if (!s) return "—";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f s", decimals, *s);
  return buf;
}

std::string percent(const Seconds& p) {
  if (!p) return "—";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f %%", *p);
  return buf;
}

std::string minutes(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  return buf;
}

}  // namespace

Seconds parse_sacct_time(const std::string& value) {
  std::tm tm{};
  std::istringstream in(value);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return static_cast<double>(timegm(&tm));
}

Seconds SlurmOverhead::fixed_cost() const {
  if (!submit_to_start || !step_launch || !teardown) return std::nullopt;
  return *submit_to_start + *step_launch + *teardown;
}

Seconds SlurmOverhead::overhead_percent() const {
  const Seconds fixed = fixed_cost();
  if (!fixed || !suites || *suites <= 0) return std::nullopt;
  return 100.0 * *fixed / *suites;
}

std::optional<SlurmOverhead> read_slurm_overhead(const std::filesystem::path& run_dir) {
  const auto slurm_file = run_dir / "slurm.json";
  std::error_code ec;
  if (!std::filesystem::exists(slurm_file, ec)) return std::nullopt;
  const json doc = read_json(slurm_file);
  if (!doc.is_object() || !doc.contains("job_id")) throw Error(slurm_file.string() + ": no job_id");

  SlurmOverhead o;
  o.job_id = text(doc, "job_id");
  o.nodes = static_cast<int>(number(doc, "nodes").value_or(0));
  o.time_limit_minutes = static_cast<int>(number(doc, "time_limit_minutes").value_or(0));
  o.expected_suite_seconds = number(doc, "expected_suite_seconds").value_or(0);

  const json& t = doc.contains("timeline") ? doc["timeline"] : json::object();
  const auto submitted = number(doc, "submitted");
  o.submit_to_start = between(submitted, number(t, "job_start"));
  o.step_launch = between(number(t, "workers_launch"), number(t, "workers_started_last"));
  o.workers_ready = between(number(t, "workers_launch"), number(t, "workers_ready"));
  o.teardown = between(number(t, "workers_stop"), number(t, "workers_stopped"));
  o.suites = between(number(t, "suites_start"), number(t, "suites_end"));
  o.job_script = between(submitted, number(t, "job_script_end"));

  const std::string sacct_name =
      text(doc, "sacct_file").empty() ? "slurm-sacct.txt" : text(doc, "sacct_file");
  const auto sacct_file = run_dir / sacct_name;
  if (std::filesystem::exists(sacct_file, ec)) {
    const SacctRow* job = nullptr;
    const SacctRow* step = nullptr;
    const auto rows = read_sacct(sacct_file);
    for (const auto& row : rows) {
      if (get(row, "JobID") == o.job_id) job = &row;
      if (get(row, "JobName") == "dpushard-workers") step = &row;
    }
    if (!job) throw Error(sacct_file.string() + ": no line for job " + o.job_id);
    o.state = get(*job, "State");
    o.node_list = get(*job, "NodeList");
    o.alloc_tres = get(*job, "AllocTRES");
    const auto submit = parse_sacct_time(get(*job, "Submit"));
    const auto start = parse_sacct_time(get(*job, "Start"));
    const auto end = parse_sacct_time(get(*job, "End"));
    o.sacct_queue = between(submit, start);
    o.sacct_job_elapsed = between(start, end);
    if (step) {
      o.sacct_step_launch = between(start, parse_sacct_time(get(*step, "Start")));
      o.sacct_step_end = between(parse_sacct_time(get(*step, "End")), end);
    }
  }
  return o;
}

DirectBaseline read_direct_baseline(const std::filesystem::path& run_dir) {
  const auto file = run_dir / "sweep-timeline.json";
  const json doc = read_json(file);
  const auto span = between(number(doc, "suites_start"), number(doc, "suites_end"));
  if (!span) throw Error(file.string() + ": no suites_start and suites_end");
  if (text(doc, "scheduler") != "direct")
    throw Error(file.string() + ": not a direct run (scheduler " + text(doc, "scheduler") + ")");
  return {run_dir.filename().string(), *span};
}

std::string render_slurm_section(const SlurmOverhead& o,
                                 const std::optional<DirectBaseline>& baseline) {
  std::ostringstream md;
  md << "## SLURM\n\n"
     << "The sweep ran as SLURM job " << o.job_id << " (" << (o.state.empty() ? "?" : o.state)
     << ") on " << (o.node_list.empty() ? "?" : o.node_list) << ", " << o.nodes
     << " node(s), allocated " << (o.alloc_tres.empty() ? "?" : o.alloc_tres) << "; time limit "
     << o.time_limit_minutes << " min from the plans' expected "
     << secs(o.expected_suite_seconds, 0) << " of suites. Sub-second times come from the job "
     << "script's timeline (`slurm.json`), whole seconds from `sacct` (`slurm-sacct.txt`).\n\n";
  md << "| what SLURM adds | timeline | sacct |\n|---|---|---|\n"
     << "| submission to start (sbatch until the job script runs; a wait for busy boards included) "
        "| "
     << secs(o.submit_to_start) << " | " << secs(o.sacct_queue, 0) << " (Start − Submit) |\n"
     << "| step launch (srun until every worker task runs) | " << secs(o.step_launch) << " | "
     << secs(o.sacct_step_launch, 0) << " (worker step Start − job Start) |\n"
     << "| teardown (SIGINT to the worker step until it ended) | " << secs(o.teardown) << " | "
     << secs(o.sacct_step_end, 0) << " (job End − worker step End) |\n"
     << "| **fixed cost per job** | **" << secs(o.fixed_cost()) << "** | |\n\n";
  md << "| sweep | |\n|---|---|\n"
     << "| suites' wall time (the sweep length) | " << secs(o.suites, 1)
     << (o.suites ? " (" + minutes(*o.suites) + ")" : "") << " |\n"
     << "| SLURM's fixed cost as a share of it | **" << percent(o.overhead_percent()) << "** |\n"
     << "| workers listening after srun (worker start included) | " << secs(o.workers_ready)
     << " |\n"
     << "| whole job, sbatch to the script's end | " << secs(o.job_script, 1) << " (sacct Elapsed "
     << secs(o.sacct_job_elapsed, 0) << ") |\n";
  if (baseline) {
    md << "| the same sweep run direct (`" << baseline->run << "`) | " << secs(baseline->suites, 1)
       << " |\n";
    if (o.suites)
      md << "| suites' wall time, SLURM − direct | " << secs(*o.suites - baseline->suites, 1)
         << " |\n";
  }
  md << "\n";
  if (const auto p = o.overhead_percent(); p && o.suites) {
    const bool long_enough = *o.suites >= kTargetSweepSeconds;
    md << "Target: SLURM's fixed cost below " << kTargetPercent << " % of a sweep of at least "
       << kTargetSweepSeconds / 60 << " minutes: "
       << (long_enough ? (*p < kTargetPercent ? "**met**" : "**not met**")
                       : "not judged (this sweep is shorter than that)")
       << ". The fixed cost does not grow with the sweep; for a sweep of T seconds it is "
       << secs(o.fixed_cost()) << " / T.";
    if (baseline)
      md << " The suites' wall times of the two runs differ by more than the fixed cost when the "
            "machine's load moves the workers' timing: that difference is not SLURM's.";
    md << "\n\n";
  }
  return md.str();
}

}  // namespace dpushard::report
