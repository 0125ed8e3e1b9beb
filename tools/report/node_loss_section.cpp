#include "node_loss_section.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis.hpp"
#include "dpushard/base/error.hpp"

namespace dpushard::report {
namespace {

using nlohmann::json;

constexpr const char* kFile = "node_loss.json";

double number(const json& j, const char* key, double fallback) {
  if (!j.contains(key) || !j[key].is_number()) return fallback;
  return j[key].get<double>();
}

std::int64_t count(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return 0;
  return static_cast<std::int64_t>(std::llround(j[key].get<double>()));
}

std::string text(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

std::optional<double> optional_number(const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

NodeLossEvent read_event(const json& e) {
  NodeLossEvent ev;
  ev.kind = text(e, "kind");
  ev.node = text(e, "node");
  ev.cause = text(e, "cause");
  ev.detected_s = number(e, "detected_s", -1);
  ev.after_fault_s = optional_number(e, "detected_after_fault_s");
  ev.plan_ms = number(e, "plan_ms", -1);
  ev.upload_s = number(e, "upload_s", -1);
  ev.upload_bytes = number(e, "upload_bytes", 0);
  ev.switch_s = number(e, "switch_s", -1);
  ev.first_frame_s = number(e, "first_frame_s", -1);
  ev.outage_s = number(e, "outage_s", -1);
  ev.frames_resent = count(e, "frames_resent");
  ev.plan_after = text(e, "plan_after");
  if (e.contains("nodes_after") && e["nodes_after"].is_array())
    for (const json& n : e["nodes_after"])
      if (n.is_string()) ev.nodes_after.push_back(n.get<std::string>());
  ev.fps_before = number(e, "fps_before", 0);
  ev.fps_during = number(e, "fps_during", 0);
  ev.fps_after = number(e, "fps_after", 0);
  ev.predicted_fps_after = number(e, "predicted_fps_after", 0);
  return ev;
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string seconds(double s) { return s < 0 ? "—" : fixed(s, 3) + " s"; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// A cause may carry '|' (a table cell's separator) or a line break from a peer's message.
std::string cell(std::string s) {
  std::string out;
  for (const char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

bool first_frame_goal(const NodeLossEvent& e) {
  const double t = e.first_frame_without_upload_s();
  return t >= 0 && t <= kFirstFrameGoalS;
}

bool prediction_goal(const NodeLossEvent& e) {
  const double r = e.after_vs_predicted();
  return r > 0 && std::abs(r - 1) <= kPredictionGoal;
}

bool frames_goal(const NodeLossRun& r) {
  return r.complete && r.frames_lost == 0 && r.frames_duplicated == 0 && r.in_order;
}

std::string met(bool ok) { return ok ? "**met**" : "**not met**"; }

}  // namespace

double NodeLossEvent::first_frame_without_upload_s() const {
  if (first_frame_s < 0) return -1;
  return first_frame_s - std::max(0.0, upload_s);
}

double NodeLossEvent::after_vs_predicted() const {
  return fps_after > 0 && predicted_fps_after > 0 ? fps_after / predicted_fps_after : 0;
}

std::optional<NodeLossBenchmark> read_node_loss(const std::filesystem::path& run_dir) {
  const auto path = run_dir / kFile;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot read it");
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array())
    throw Error(path.string() + ": no \"runs\" array");
  NodeLossBenchmark b;
  b.command = text(doc, "command");
  b.revision = text(doc, "revision");
  b.date_utc = text(doc, "date_utc");
  b.model = text(doc, "model");
  b.workers = text(doc, "workers");
  b.link = text(doc, "link");
  b.objective = text(doc, "objective");
  b.frames = count(doc, "frames");
  b.inflight = static_cast<int>(count(doc, "inflight"));
  b.peer_timeout_s = number(doc, "peer_timeout_s", 0);
  b.load_start = optional_number(doc, "load_average_start");
  b.load_end = optional_number(doc, "load_average_end");
  for (std::size_t k = 0; k < doc["runs"].size(); ++k) {
    const json& r = doc["runs"][k];
    const std::string where = path.string() + ": runs[" + std::to_string(k) + "]";
    if (!r.is_object() || !r.contains("nodes") || !r["nodes"].is_number_integer())
      throw Error(where + ": no \"nodes\" count");
    if (r.contains("events") && !r["events"].is_array())
      throw Error(where + ": \"events\" is not an array");
    NodeLossRun run;
    run.nodes = r["nodes"].get<int>();
    run.plan = text(r, "plan");
    run.predicted_fps = number(r, "predicted_fps", 0);
    run.complete = r.value("complete", false);
    run.error = text(r, "error");
    run.frames = count(r, "frames");
    run.frames_delivered = count(r, "frames_delivered");
    run.frames_lost = count(r, "frames_lost");
    run.frames_duplicated = count(r, "frames_duplicated");
    run.in_order = r.value("in_order", false);
    run.frames_resent = count(r, "frames_resent");
    run.stale_messages_dropped = count(r, "stale_messages_dropped");
    if (r.contains("events"))
      for (const json& e : r["events"]) {
        if (!e.is_object()) throw Error(where + ": an event is not an object");
        run.events.push_back(read_event(e));
      }
    b.runs.push_back(std::move(run));
  }
  return b;
}

bool node_loss_goals_met(const NodeLossBenchmark& b) {
  if (b.runs.empty()) return false;
  for (const NodeLossRun& r : b.runs) {
    if (!frames_goal(r)) return false;
    for (const NodeLossEvent& e : r.events)
      if (e.kind == "loss" && (!first_frame_goal(e) || !prediction_goal(e))) return false;
  }
  return true;
}

std::string render_node_loss_section(const NodeLossBenchmark& b) {
  std::ostringstream md;
  md << "## Node loss and return\n\n"
     << "`scripts/node_loss_bench.py` (`node_loss.json`) ran " << b.frames << " frames of a "
     << (b.model.empty() ? "model" : b.model) << " with `run --cluster --on-node-loss replan` ("
     << b.inflight << " in flight, objective " << (b.objective.empty() ? "?" : b.objective)
     << ", peer timeout " << fixed(b.peer_timeout_s, 1) << " s) on "
     << (b.workers.empty() ? "local" : b.workers) << " workers"
     << (b.link.empty() ? "" : ", link " + b.link)
     << ", and killed one worker (SIGKILL) in the middle of each run. Times are seconds of the "
        "run's clock; the first frame on the new plan is counted from the detection, and given "
        "without the upload of the fragments the survivors lacked as well (the upload is "
        "reported on its own).";
  if (!b.revision.empty()) md << " Revision `" << b.revision << "`";
  if (!b.date_utc.empty()) md << ", " << b.date_utc;
  if (b.load_start || b.load_end)
    md << "; load average " << (b.load_start ? fixed(*b.load_start, 1) : "?") << " at the start, "
       << (b.load_end ? fixed(*b.load_end, 1) : "?") << " at the end";
  md << ".";
  if (!b.command.empty()) md << "\n\n```\n" << b.command << "\n```";
  md << "\n\n";

  md << "| nodes | plan before → after | event | detected | first frame on the new plan "
        "(without upload) | upload | re-sent | fps before / during / after | after vs "
        "predicted |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const NodeLossRun& r : b.runs) {
    if (r.events.empty()) {
      md << "| " << r.nodes << " | " << cell(r.plan) << " | none recorded | | | | | | |\n";
      continue;
    }
    std::string before = r.plan;  // the plan each event switched from
    for (const NodeLossEvent& e : r.events) {
      const std::string kind = e.kind == "loss"           ? "loss of "
                               : e.kind == "return"       ? "return of "
                               : e.kind == "device_error" ? "device error on "
                                                          : e.kind + " of ";
      md << "| " << r.nodes << " | " << cell(before) << " → "
         << (e.plan_after.empty() ? "—" : cell(e.plan_after)) << " on "
         << (e.nodes_after.empty() ? "—" : cell(join(e.nodes_after))) << " | " << kind
         << cell(e.node) << ": " << cell(e.cause) << " | ";
      if (e.after_fault_s) md << fixed(*e.after_fault_s * 1000, 0) << " ms after the kill, ";
      md << "t = " << (e.detected_s < 0 ? "?" : fixed(e.detected_s, 2) + " s") << " | "
         << seconds(e.first_frame_s) << " (" << seconds(e.first_frame_without_upload_s()) << ") | "
         << seconds(e.upload_s) << ", " << fixed(e.upload_bytes / 1e6, 1) << " MB | "
         << e.frames_resent << " | " << fixed(e.fps_before, 1) << " / " << fixed(e.fps_during, 1)
         << " / " << fixed(e.fps_after, 1) << " | ";
      if (e.after_vs_predicted() > 0)
        md << fixed(e.after_vs_predicted(), 3) << "× of " << fixed(e.predicted_fps_after, 1);
      else
        md << "—";
      md << " |\n";
      if (!e.plan_after.empty()) before = e.plan_after;
    }
  }
  md << "\n| nodes | plan predicted fps | complete | frames delivered | lost | duplicated | in "
        "order | re-sent | stale messages dropped |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const NodeLossRun& r : b.runs)
    md << "| " << r.nodes << " | " << fixed(r.predicted_fps, 1) << " | "
       << (r.complete ? "yes" : "no: " + cell(r.error)) << " | " << r.frames_delivered << " of "
       << r.frames << " | " << r.frames_lost << " | " << r.frames_duplicated << " | "
       << (r.in_order ? "yes" : "no") << " | " << r.frames_resent << " | "
       << r.stale_messages_dropped << " |\n";

  bool first_ok = true, prediction_ok = true, frames_ok = true, any_loss = false;
  double worst_first = 0;
  for (const NodeLossRun& r : b.runs) {
    frames_ok = frames_ok && frames_goal(r);
    for (const NodeLossEvent& e : r.events) {
      if (e.kind != "loss") continue;
      any_loss = true;
      first_ok = first_ok && first_frame_goal(e);
      prediction_ok = prediction_ok && prediction_goal(e);
      worst_first = std::max(worst_first, e.first_frame_without_upload_s());
    }
  }
  md << "\nGoals (issue 27), for each loss: the first frame on the new plan within "
     << fixed(kFirstFrameGoalS, 0) << " s of detection, upload excluded: "
     << (any_loss ? met(first_ok) + " (at most " + seconds(worst_first) + ")" : "no loss recorded")
     << "; throughput after within " << fixed(kPredictionGoal * 100, 0)
     << " % of the survivors' plan's prediction: "
     << (any_loss ? met(prediction_ok) : "no loss recorded")
     << "; every frame delivered exactly once and in order: " << met(frames_ok) << ".";
  const std::string workers_backend = b.workers.substr(0, b.workers.find(' '));  // "sim (kv260)"
  if (backend_is_modeled(workers_backend))
    md << " The workers are `" << workers_backend
       << "`: their compute time is modeled, the tensors really cross the "
          "paced link between the processes.";
  md << "\n\n";
  return md.str();
}

}  // namespace dpushard::report
