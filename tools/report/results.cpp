#include "results.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "dpushard/base/error.hpp"

namespace dpushard::report {
namespace {

using nlohmann::json;

// "cnn/params:10M/nodes:3/strategy:experts/iterations:1/manual_time": the family is the
// first segment, then key:value segments; anything else Google Benchmark appends is kept
// out. Returns false when the name is not a scaling configuration.
bool parse_run_name(const std::string& run_name, Measurement& m) {
  std::vector<std::string> parts;
  std::stringstream stream(run_name);
  for (std::string part; std::getline(stream, part, '/');) parts.push_back(part);
  if (parts.size() < 4) return false;
  std::map<std::string, std::string> keys;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto colon = parts[i].find(':');
    if (colon != std::string::npos) keys[parts[i].substr(0, colon)] = parts[i].substr(colon + 1);
  }
  if (!keys.contains("params") || !keys.contains("nodes") || !keys.contains("strategy"))
    return false;
  m.family = parts[0];
  m.size = keys["params"];
  m.strategy = keys["strategy"];
  m.scenario = keys.contains("scenario") ? keys["scenario"] : "";
  try {
    std::size_t used = 0;
    m.nodes = std::stoi(keys["nodes"], &used);
    if (used != keys["nodes"].size() || m.nodes < 1) return false;
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

double number_field(const json& entry, const char* key, double fallback, const std::string& where,
                    bool required) {
  const auto it = entry.find(key);
  if (it == entry.end()) {
    if (required) throw Error(where + ": counter '" + key + "' is missing");
    return fallback;
  }
  if (!it->is_number()) throw Error(where + ": counter '" + key + "' is not a number");
  return it->get<double>();
}

std::string string_field(const json& entry, const char* key, const std::string& fallback = "") {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : fallback;
}

// The measurement of one configuration from its entries: the "mean" aggregate when the
// suite ran repetitions, otherwise the average of its iteration entries.
Measurement combine(const std::vector<const json*>& entries, const std::string& run_name,
                    const std::string& origin) {
  const std::string where = origin + ": benchmark '" + run_name + "'";
  Measurement m;
  m.file = origin;
  m.name = run_name;
  parse_run_name(run_name, m);

  std::vector<const json*> use;
  for (const json* e : entries)
    if (string_field(*e, "run_type") == "aggregate" && string_field(*e, "aggregate_name") == "mean")
      use.push_back(e);
  const bool from_mean = !use.empty();
  if (!from_mean)
    for (const json* e : entries)
      if (string_field(*e, "run_type", "iteration") == "iteration") use.push_back(e);
  if (use.empty()) throw Error(where + ": no iteration or mean entry");

  // "hybrid 2x experts [planner's choice]": the plan, and auto's mark (bench/scaling/suite.cpp).
  static const std::string kChoiceMark = " [planner's choice]";
  m.plan_label = string_field(*entries.front(), "label");
  if (m.plan_label.size() >= kChoiceMark.size() &&
      m.plan_label.compare(m.plan_label.size() - kChoiceMark.size(), kChoiceMark.size(),
                           kChoiceMark) == 0) {
    m.planner_choice = true;
    m.plan_label.resize(m.plan_label.size() - kChoiceMark.size());
  }
  static const std::string kNotPossible = "not possible: ";
  for (const json* e : use) {
    if (e->value("error_occurred", false)) {
      m.failed = true;
      m.error = string_field(*e, "error_message", "failed");
      if (m.error.rfind(kNotPossible, 0) == 0) {
        m.not_possible = true;
        m.error = m.error.substr(kNotPossible.size());
      }
      return m;
    }
  }
  auto average = [&](const char* key, bool required) {
    double sum = 0;
    for (const json* e : use) sum += number_field(*e, key, 0, where, required);
    return sum / static_cast<double>(use.size());
  };
  m.params = average("params", true);
  m.gmacs = average("gmacs", false);
  m.fps = average("fps", true);
  m.span_fps = average("span_fps", false);
  m.fps_spread = average("fps_spread", false);
  m.p50_spread = average("p50_spread", false);
  m.p50_ms = average("p50_ms", false);
  m.p90_ms = average("p90_ms", false);
  m.p99_ms = average("p99_ms", false);
  m.bytes_per_frame = average("bytes_per_frame", false);
  m.node_bytes_per_frame = average("node_bytes_per_frame", false);
  m.predicted_fps = average("predicted_fps", false);
  m.busiest_node_share = average("busiest_node_share", false);
  m.node_ms = average("node_ms", false);
  m.predicted_node_ms = average("predicted_node_ms", false);
  m.worker_cpu_ms = average("worker_cpu_ms", false);
  m.orchestrator_cpu_ms = average("orchestrator_cpu_ms", false);
  m.node_tx_bytes = average("node_tx_bytes", false);
  m.link_paced = use.front()->contains("link_paced") ? average("link_paced", false) : -1;
  m.bound_node_fps = average("bound_node_fps", false);
  m.inflight = average("inflight", false);
  m.latency_bound_ms = average("latency_bound_ms", false);
  m.offline_fps = average("offline_fps", false);
  m.predicted_latency_ms = average("predicted_latency_ms", false);
  m.dpu_mac_share = average("dpu_mac_share", false);
  m.dpu_time_share = average("dpu_time_share", false);
  m.dpu_ms = average("dpu_ms", false);
  m.busiest_dpu_ms = average("busiest_dpu_ms", false);
  m.plan_max_latency_ms = average("plan_max_latency_ms", false);
  static const std::string kMacShare = "fragment_dpu_mac_share/";
  for (const auto& [key, value] : use.front()->items())
    if (key.rfind(kMacShare, 0) == 0 && value.is_number()) {
      const std::string name = key.substr(kMacShare.size());
      const auto time = use.front()->find("fragment_dpu_time_share/" + name);
      m.fragment_dpu.push_back(
          {name, value.get<double>(),
           time != use.front()->end() && time->is_number() ? time->get<double>() : 0.0});
    }
  m.bound_link_fps = average("bound_link_fps", false);
  m.bound_port_fps = average("bound_port_fps", false);
  m.repetitions = from_mean
                      ? static_cast<int>(number_field(*use.front(), "repetitions", 1, where, false))
                      : static_cast<int>(use.size());
  // Server's fps is the highest rate that met its bound: none (0) is a result.
  if (!(m.fps > 0) && !(m.scenario == "Server" && m.fps == 0))
    throw Error(where + ": counter 'fps' is not positive");

  // The spread, from the repetitions' own entries (Google Benchmark writes them beside
  // the aggregates unless told to report aggregates only).
  std::vector<double> fps;
  for (const json* e : entries)
    if (string_field(*e, "run_type", "iteration") == "iteration" &&
        !e->value("error_occurred", false))
      fps.push_back(number_field(*e, "fps", 0, where, true));
  m.fps_lo = m.fps_hi = m.fps;
  if (fps.size() >= 2) {
    double mean = 0;
    for (double v : fps) mean += v;
    mean /= static_cast<double>(fps.size());
    double ss = 0;
    for (double v : fps) ss += (v - mean) * (v - mean);
    const auto n = static_cast<double>(fps.size());
    m.fps_stddev = std::sqrt(ss / (n - 1));
    const double half = student_t95(static_cast<int>(fps.size()) - 1) * m.fps_stddev / std::sqrt(n);
    m.fps_lo = m.fps - half;
    m.fps_hi = m.fps + half;
    m.repetitions = static_cast<int>(fps.size());
  }
  return m;
}

std::string context_value(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number() || value.is_boolean()) return value.dump();
  return value.dump();
}

}  // namespace

double student_t95(int df) {
  static const double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131};
  if (df < 1) return 0;
  if (df <= 15) return kTable[df - 1];
  return 1.96 + 2.4 / df;  // within 0.5 % of the exact quantile beyond 15
}

std::string SuiteContext::get(const std::string& key, const std::string& fallback) const {
  const auto it = values.find(key);
  return it == values.end() ? fallback : it->second;
}

void parse_benchmark_json(const json& doc, const std::string& origin, RunResults& into) {
  if (!doc.is_object() || !doc.contains("context") || !doc.contains("benchmarks"))
    throw Error(origin + ": not Google Benchmark output (no 'context' and 'benchmarks')");
  if (!doc["context"].is_object()) throw Error(origin + ": 'context' is not an object");
  if (!doc["benchmarks"].is_array()) throw Error(origin + ": 'benchmarks' is not an array");

  SuiteContext context{origin, {}};
  for (const auto& [key, value] : doc["context"].items())
    context.values[key] = context_value(value);
  into.suites.push_back(std::move(context));

  // Group the entries by configuration, keeping the order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> groups;
  for (const json& entry : doc["benchmarks"]) {
    if (!entry.is_object()) throw Error(origin + ": a 'benchmarks' entry is not an object");
    const std::string run_name = string_field(entry, "run_name", string_field(entry, "name"));
    if (run_name.empty()) throw Error(origin + ": a 'benchmarks' entry has no name");
    Measurement probe;
    if (!parse_run_name(run_name, probe)) continue;  // not a scaling configuration
    if (!groups.contains(run_name)) order.push_back(run_name);
    groups[run_name].push_back(&entry);
  }
  for (const std::string& run_name : order)
    into.measurements.push_back(combine(groups[run_name], run_name, origin));
}

std::optional<ServeSearch> parse_serve_search(const json& doc, const std::string& origin) {
  if (!doc.is_object() || string_field(doc, "kind") != "serve_server_search") return std::nullopt;
  const std::string where = origin + " (a Server search through serve)";
  const auto search = doc.find("search");
  if (search == doc.end() || !search->is_object()) throw Error(where + ": no \"search\" object");
  const json context = doc.value("context", json::object());
  if (!context.is_object()) throw Error(where + ": \"context\" is not an object");
  ServeSearch s;
  s.file = origin;
  s.family = string_field(context, "family");
  s.size = string_field(context, "size");
  s.strategy = string_field(context, "strategy");
  s.plan_label = string_field(context, "plan_label");
  s.backend = string_field(context, "backend");
  s.tensors = string_field(*search, "tensors", "binary");
  if (s.family.empty() || s.size.empty())
    throw Error(where + ": its context names no family and size");
  const std::string nodes = string_field(context, "nodes");
  try {
    s.nodes = std::stoi(nodes);
  } catch (const std::exception&) {
    throw Error(where + ": context nodes '" + nodes + "' is not a number");
  }
  s.bound_ms = number_field(*search, "bound_ms", 0, where, true);
  s.top_rate = number_field(*search, "top_rate", 0, where, true);
  s.rate = number_field(*search, "rate", 0, where, true);
  s.p50_ms = number_field(*search, "p50_ms", 0, where, true);
  s.p99_ms = number_field(*search, "p99_ms", 0, where, true);
  s.trials = static_cast<int>(number_field(*search, "trials", 0, where, true));
  s.failed = number_field(*search, "errors", 0, where, true);
  if (const auto at = search->find("at_rate"); at != search->end()) {
    if (!at->is_object()) throw Error(where + ": \"at_rate\" is not an object");
    s.at_rate_measured = true;
    s.at_rate = number_field(*at, "rate", 0, where, true);
    s.at_achieved = number_field(*at, "achieved_rate", 0, where, true);
    // null when no request at that rate succeeded
    s.at_p50_ms = (*at).value("p50_ms", json()).is_number() ? (*at)["p50_ms"].get<double>() : -1;
    s.at_p99_ms = (*at).value("p99_ms", json()).is_number() ? (*at)["p99_ms"].get<double>() : -1;
    const json errors = at->value("errors", json::object());
    if (!errors.is_object()) throw Error(where + ": at_rate's \"errors\" is not an object");
    for (const auto& [label, n] : errors.items())
      if (n.is_number()) s.at_failed += n.get<double>();
  }
  return s;
}

RunResults read_results(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(dir.string() + ": not a folder of results");
  RunResults results;
  results.dir = dir;

  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry);
  if (ec) throw Error(dir.string() + ": cannot list the folder: " + ec.message());
  std::sort(files.begin(), files.end());

  for (const auto& path : files) {
    std::ifstream in(path);
    if (!in) throw Error(path.string() + ": cannot read");
    std::stringstream text;
    text << in.rdbuf();
    // Google Benchmark writes NaN and inf bare (the cv of a counter that is 0 in every
    // repetition), which is not JSON; such values say nothing, so they become null.
    static const std::regex kNonFinite(R"(:\s*-?(NaN|nan|inf|Infinity)\b)");
    json doc = json::parse(std::regex_replace(text.str(), kNonFinite, ": null"), nullptr, false);
    if (doc.is_discarded()) throw Error(path.string() + ": not valid JSON");
    const std::string name = path.filename().string();
    if (name == "env.json") {
      if (!doc.is_object()) throw Error(path.string() + ": not a JSON object");
      results.env = std::move(doc);
    } else if (doc.is_object() && doc.contains("context") && doc.contains("benchmarks")) {
      parse_benchmark_json(doc, name, results);
    } else if (auto serve = parse_serve_search(doc, name)) {
      results.serve.push_back(std::move(*serve));
    }
  }
  if (results.measurements.empty())
    throw Error(dir.string() + ": no scaling measurements (no bench_*_scaling JSON output)");
  return results;
}

}  // namespace dpushard::report
