// bench_serve_load PLAN_DIR [--server HOST:PORT] [--in-process] [--rate R] [--duration S]
//                           [--concurrency C] [--runners N] [--backend B] [--json-tensors]
//                           [--token-file F] [--json] [--out FILE]
// bench_serve_load PLAN_DIR --server HOST:PORT --search --max-latency-ms B --top-rate R
//                           [--server-trials N] [--min-seconds S] [--at-rate A] ...
// The Server scenario: Poisson-timed infer requests on the plan's model, sent to a running
// `dpushard serve` (binary tensor data, or JSON with --json-tensors) and/or run on the same
// plan in this process (LocalExecutor, as serve --local runs it) at the same rate; prints the
// achieved rate, p50/p99 latency and errors of each, and serve's overhead per request.
// --search instead looks for the highest rate whose p99 through serve stays under B (the
// suites' search, server_search.hpp), and with --at-rate also measures serve at rate A (the
// in-process orchestrator's Server rate, for the overhead per request at the same rate).

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dpushard/base/atomic_file.hpp"
#include "dpushard/exec/builtin_backends.hpp"
#include "dpushard/graph/tensor.hpp"
#include "dpushard/net/net.hpp"
#include "dpushard/plan/plan_yaml.hpp"
#include "dpushard/serve/local_executor.hpp"
#include "serve_load/http_client.hpp"
#include "serve_load/poisson_load.hpp"
#include "serve_load/rate_search.hpp"

namespace {

using dpushard::bench::HttpConnection;
using dpushard::bench::LoadOptions;
using dpushard::bench::LoadResult;
using nlohmann::json;

struct Args {
  std::string plan_dir;
  std::string server;
  bool in_process = false;
  LoadOptions load;
  int runners = 1;
  std::string backend = "ref";
  bool json_tensors = false;
  std::string token_file;
  bool json = false;
  std::string out_file;
  std::vector<std::string> context;  // KEY=VALUE, copied into the JSON's "context"
  bool search = false;
  dpushard::bench::RateSearchOptions search_options;
};

// One request body for the model's inputs (seeded random int8 frames).
struct RequestBody {
  std::string body;
  std::string headers;
};

RequestBody make_body(const dpushard::Plan& plan, bool json_tensors, const std::string& token) {
  json header = {{"inputs", json::array()}};
  std::string binary;
  for (const auto& in : plan.model_inputs) {
    const dpushard::QTensor t = dpushard::random_qtensor(in.name, in.shape, in.fix_point, 1);
    json input = {{"name", in.name}, {"shape", in.shape}, {"datatype", "INT8"}};
    if (json_tensors) {
      json data = json::array();
      for (auto q : t.data) data.push_back(int(q));
      input["data"] = std::move(data);
    } else {
      input["parameters"] = {{"binary_data_size", t.data.size()}};
      binary.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
    }
    header["inputs"].push_back(std::move(input));
  }
  if (!json_tensors) header["parameters"] = {{"binary_data_output", true}};
  RequestBody r;
  r.body = header.dump();
  if (!json_tensors)
    r.headers = "Inference-Header-Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  r.body += binary;
  if (!token.empty()) r.headers += "Authorization: Bearer " + token + "\r\n";
  return r;
}

json summary(const LoadResult& r) {
  json errors = json::object();
  for (const auto& [label, n] : r.errors) errors[label] = n;
  auto ms = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
  return {{"sent", r.sent},
          {"ok", r.ok},
          {"errors", errors},
          {"achieved_rate", r.achieved_rate()},
          {"p50_ms", ms(r.percentile_ms(50))},
          {"p99_ms", ms(r.percentile_ms(99))}};
}

// A failed request's label: the status and the protocol's error message, when it has one.
std::string http_error(const dpushard::bench::HttpReply& reply) {
  std::string label = std::to_string(reply.status);
  try {
    const json body = json::parse(reply.body);
    if (body.is_object() && body.contains("error") && body["error"].is_string())
      label += " " + body["error"].get<std::string>();
  } catch (const json::exception&) {
  }
  return label;
}

int finish(const Args& a, const json& report);

std::string line(const std::string& what, const json& s) {
  std::ostringstream out;
  out.precision(4);
  std::size_t errors = 0;
  for (const auto& [label, n] : s["errors"].items()) errors += n.get<std::size_t>();
  out << what << ": achieved " << s["achieved_rate"].get<double>() << "/s, p50 "
      << (s["p50_ms"].is_null() ? -1.0 : s["p50_ms"].get<double>()) << " ms, p99 "
      << (s["p99_ms"].is_null() ? -1.0 : s["p99_ms"].get<double>()) << " ms, " << errors
      << " errors";
  if (errors) out << " " << s["errors"].dump();
  return out.str();
}

int run(const Args& a) {
  const dpushard::Plan plan = dpushard::read_plan(a.plan_dir);
  const std::string model = plan.model_name;
  json report = {{"plan", a.plan_dir}, {"model", model}, {"concurrency", a.load.concurrency}};
  if (!a.context.empty()) {
    report["context"] = json::object();
    for (const std::string& kv : a.context) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw std::runtime_error("--context takes KEY=VALUE, not '" + kv + "'");
      report["context"][kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  if (!a.search) {
    report["rate"] = a.load.rate;
    report["duration_s"] = a.load.duration_s;
  }
  if (!a.server.empty()) {
    const auto colon = a.server.rfind(':');
    if (colon == std::string::npos) throw std::runtime_error("--server takes HOST:PORT");
    const std::string host = a.server.substr(0, colon);
    const auto port = static_cast<std::uint16_t>(std::stoi(a.server.substr(colon + 1)));
    const std::string token =
        a.token_file.empty() ? "" : dpushard::net::read_token_file(a.token_file);
    const RequestBody request = make_body(plan, a.json_tensors, token);
    std::vector<std::unique_ptr<HttpConnection>> connections;
    for (int i = 0; i < a.load.concurrency; ++i)
      connections.push_back(std::make_unique<HttpConnection>(host, port));
    const std::string target = "/v2/models/" + model + "/infer";
    const auto send = [&](int sender) {
      try {
        const auto reply = connections[std::size_t(sender)]->request("POST", target, request.body,
                                                                     request.headers);
        return reply.status == 200 ? std::string() : http_error(reply);
      } catch (const std::exception& e) {
        return std::string("connection: ") + e.what();
      }
    };
    if (a.search) {
      report["kind"] = "serve_server_search";
      report["search"] = dpushard::bench::search_rate(a.search_options, a.load, send);
      report["search"]["tensors"] = a.json_tensors ? "json" : "binary";
      return finish(a, report);
    }
    report["serve"] = summary(dpushard::bench::run_poisson_load(a.load, send));
    report["serve"]["tensors"] = a.json_tensors ? "json" : "binary";
  }
  if (a.in_process) {
    dpushard::LocalRunOptions options;
    options.backend = a.backend;
    dpushard::LocalExecutor executor(plan, a.plan_dir, options, a.runners);
    std::vector<dpushard::QTensor> inputs;
    for (const auto& in : plan.model_inputs)
      inputs.push_back(dpushard::random_qtensor(in.name, in.shape, in.fix_point, 1));
    const LoadResult r = dpushard::bench::run_poisson_load(a.load, [&](int) {
      try {
        executor.infer(inputs);
        return std::string();
      } catch (const std::exception& e) {
        return std::string("failed: ") + e.what();
      }
    });
    report["in_process"] = summary(r);
    report["in_process"]["runners"] = a.runners;
    report["in_process"]["backend"] = a.backend;
  }
  if (report.contains("serve") && report.contains("in_process") &&
      !report["serve"]["p50_ms"].is_null() && !report["in_process"]["p50_ms"].is_null())
    report["serve_overhead_ms"] = {{"p50", report["serve"]["p50_ms"].get<double>() -
                                               report["in_process"]["p50_ms"].get<double>()},
                                   {"p99", report["serve"]["p99_ms"].get<double>() -
                                               report["in_process"]["p99_ms"].get<double>()}};
  return finish(a, report);
}

int finish(const Args& a, const json& report) {
  if (!a.out_file.empty()) dpushard::write_file_atomically(a.out_file, report.dump(2) + "\n");
  if (a.json) {
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  if (report.contains("search")) {
    std::cout << dpushard::bench::describe_search(report["search"], a.server);
    return 0;
  }
  const std::string model = report["model"].get<std::string>();
  std::cout << "Server scenario on " << model << ": Poisson " << a.load.rate << "/s for "
            << a.load.duration_s << " s, " << a.load.concurrency << " senders\n";
  if (report.contains("serve"))
    std::cout << "  " << line("serve " + a.server, report["serve"]) << "\n";
  if (report.contains("in_process"))
    std::cout << "  "
              << line("in-process (" + std::to_string(a.runners) + " runner(s) on " + a.backend +
                          ")",
                      report["in_process"])
              << "\n";
  if (report.contains("serve_overhead_ms")) {
    std::ostringstream out;
    out.precision(3);
    out << "  serve overhead per request: p50 " << report["serve_overhead_ms"]["p50"].get<double>()
        << " ms, p99 " << report["serve_overhead_ms"]["p99"].get<double>() << " ms\n";
    std::cout << out.str();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dpushard::register_builtin_backends();
  Args a;
  CLI::App app{"Poisson-timed infer requests against dpushard serve and/or in-process"};
  app.add_option("plan", a.plan_dir, "The plan folder serve was started on")->required();
  app.add_option("--server", a.server, "HOST:PORT of a running dpushard serve");
  app.add_flag("--in-process", a.in_process, "Also run the load on the plan in this process");
  app.add_option("--rate", a.load.rate, "Requests per second offered")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--duration", a.load.duration_s, "Seconds of requests")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--concurrency", a.load.concurrency, "Senders (connections)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--seed", a.load.seed, "Seed of the arrival times")->capture_default_str();
  app.add_option("--runners", a.runners, "--in-process: runners (as serve --runners)")
      ->capture_default_str();
  app.add_option("--backend", a.backend, "--in-process: backend")->capture_default_str();
  app.add_flag("--json-tensors", a.json_tensors, "Send JSON tensors instead of binary data");
  app.add_option("--token-file", a.token_file, "serve's --token-file");
  app.add_flag("--json", a.json, "Print one JSON object");
  app.add_option("--out", a.out_file, "Also write the JSON object to this file (atomically)");
  app.add_option("--context", a.context,
                 "KEY=VALUE added to the JSON's \"context\" (what was served; repeatable)");
  dpushard::bench::RateSearchOptions& so = a.search_options;
  app.add_flag("--search", a.search,
               "With --server: find the highest Poisson rate whose p99 stays under "
               "--max-latency-ms (bisection up to --top-rate, as the suites' Server scenario)");
  app.add_option("--max-latency-ms", so.bound_ms, "--search: the p99 bound in ms")
      ->check(CLI::PositiveNumber);
  app.add_option("--top-rate", so.top_rate,
                 "--search: the bisection's upper end, requests/s (the plan's Offline rate)")
      ->check(CLI::PositiveNumber);
  app.add_option("--server-trials", so.rates, "--search: rates tried by the bisection")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--min-seconds", so.min_seconds,
                 "--search: seconds of arrivals per rate tried (at least 64 arrivals)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--at-rate", so.at_rate,
                 "--search: also measure serve at this rate (the in-process Server rate)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (a.server.empty() && !a.in_process) {
    std::cerr << "bench_serve_load: give --server HOST:PORT, --in-process, or both\n";
    return 2;
  }
  if (a.search && (a.server.empty() || a.in_process || !(so.bound_ms > 0) || !(so.top_rate > 0))) {
    std::cerr << "bench_serve_load: --search needs --server, --max-latency-ms and --top-rate "
                 "(and no --in-process)\n";
    return 2;
  }
  try {
    return run(a);
  } catch (const std::exception& e) {
    std::cerr << "bench_serve_load: error: " << e.what() << "\n";
    return 1;
  }
}
