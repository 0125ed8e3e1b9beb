#pragma once
// The report's "Node loss and return" section: what scripts/node_loss_bench.py measured when
// it killed a worker in the middle of a run with `--on-node-loss replan` (docs/cluster.md,
// "Losing a node"). Read from the run folder's node_loss.json, which the script writes with
// `--results-dir DIR`; a run folder without it gets no section.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dpushard::report {

// One loss or return of a node, as `run --json` recorded it (node_events[]), with the
// figures the script adds. A figure the file does not give is -1 (a duration) or absent.
struct NodeLossEvent {
  std::string kind;  // loss, return or device_error
  std::string node;
  std::string cause;
  double detected_s = -1;               // in the run's clock (seconds from the stream's start)
  std::optional<double> after_fault_s;  // detection after the kill, by the script's clock
  double plan_ms = -1;
  double upload_s = -1;
  double upload_bytes = 0;
  double switch_s = -1;
  double first_frame_s = -1;  // detection to the first frame on the new plan
  double outage_s = -1;
  std::int64_t frames_resent = 0;
  std::string plan_after;
  std::vector<std::string> nodes_after;
  double fps_before = 0, fps_during = 0, fps_after = 0;
  double predicted_fps_after = 0;

  // first_frame_s without the upload (the goal leaves the upload out); -1 unknown.
  double first_frame_without_upload_s() const;
  // fps_after / predicted_fps_after; 0 when either is missing.
  double after_vs_predicted() const;
};

// One run of the benchmark: a cluster of `nodes` workers, one of them killed.
struct NodeLossRun {
  int nodes = 0;
  std::string plan;  // the plan it started with
  double predicted_fps = 0;
  bool complete = false;
  std::string error;  // when not complete
  std::int64_t frames = 0;
  std::int64_t frames_delivered = 0;   // distinct frames delivered
  std::int64_t frames_lost = 0;        // never delivered
  std::int64_t frames_duplicated = 0;  // delivered more than once
  bool in_order = false;
  std::int64_t frames_resent = 0;
  std::int64_t stale_messages_dropped = 0;
  std::vector<NodeLossEvent> events;
};

struct NodeLossBenchmark {
  std::string command;   // the script's command line
  std::string revision;  // the checkout it ran from
  std::string date_utc;
  std::string model;    // e.g. "20M CNN"
  std::string workers;  // e.g. "sim (kv260)"
  std::string link;     // e.g. "1 Gbit/s, paced"
  std::string objective;
  std::int64_t frames = 0;
  int inflight = 0;
  double peer_timeout_s = 0;
  std::optional<double> load_start, load_end;  // 1-minute load averages
  std::vector<NodeLossRun> runs;
};

// The goals: the first frame on the new plan within this long of detection (upload
// excluded), the survivors within this share of their plan's prediction.
inline constexpr double kFirstFrameGoalS = 2.0;
inline constexpr double kPredictionGoal = 0.10;

// Reads RUN_DIR/node_loss.json; nullopt when there is none. Throws dpushard::Error naming
// the file when it is malformed.
std::optional<NodeLossBenchmark> read_node_loss(const std::filesystem::path& run_dir);

// "## Node loss and return": the benchmark, a row per event, the frames' accounting per run
// and the goals met or not.
std::string render_node_loss_section(const NodeLossBenchmark& b);

// Every goal met: every run complete with no frame lost or duplicated and in order, every
// loss's first frame within kFirstFrameGoalS (upload excluded) and its throughput after
// within kPredictionGoal of the prediction.
bool node_loss_goals_met(const NodeLossBenchmark& b);

}  // namespace dpushard::report
