// The Open Inference Protocol's REST routes (KServe v2: health, metadata, infer) and /metrics.

#include "oip_service.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "oip_tensors.hpp"

namespace dpushard::serve {

namespace {

using nlohmann::json;

HttpResponse json_response(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  // Messages quote the request (its path, names): bytes that are not UTF-8 become U+FFFD
  // rather than an exception.
  r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

// "/v2/models/NAME/infer" -> {"v2", "models", "NAME", "infer"}; the query is dropped.
std::vector<std::string> path_parts(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= target.size()) {
    const std::size_t end = std::min(target.find('/', start), target.size());
    if (end > start) parts.emplace_back(target.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

HttpResponse error_response(int status, const std::string& message) {
  return json_response(status, {{"error", message}});
}

OipService::OipService(InferenceExecutor& executor, std::string token, std::size_t queue_capacity)
    : executor_(executor),
      token_(std::move(token)),
      queue_(executor.max_in_flight(), queue_capacity) {}

bool OipService::authorized(const HttpRequest& request) const {
  if (token_.empty()) return true;
  const std::string expected = "Bearer " + token_;
  // Constant time, so the comparison says nothing about how much of a guess was right.
  return request.authorization.size() == expected.size() &&
         CRYPTO_memcmp(request.authorization.data(), expected.data(), expected.size()) == 0;
}

void OipService::handle(HttpRequest request, std::function<void(HttpResponse)> respond) {
  auto counted = [this, respond = std::move(respond)](HttpResponse response) {
    metrics_.count_response(response.status);
    respond(std::move(response));
  };
  bool answered_later = false;
  HttpResponse response;
  try {
    response = route(request, counted, answered_later);
  } catch (const std::exception& e) {
    response = error_response(500, e.what());
  }
  if (!answered_later) counted(std::move(response));
}

HttpResponse OipService::route(const HttpRequest& request,
                               const std::function<void(HttpResponse)>& respond,
                               bool& answered_later) {
  if (!authorized(request))
    return error_response(401, "a valid 'Authorization: Bearer TOKEN' header is required");
  const std::vector<std::string> p = path_parts(request.target);
  auto only = [&](const char* method) -> std::optional<HttpResponse> {
    if (request.method == method) return std::nullopt;
    return error_response(
        405, request.method + " is not allowed on " + request.target + " (" + method + " is)");
  };
  if (p == std::vector<std::string>{"metrics"}) {
    if (auto refused = only("GET")) return *refused;
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    Metrics::Gauges g;
    g.queue_depth = queue_.depth();
    g.queue_capacity = queue_.capacity();
    g.in_flight = queue_.running();
    g.uptime_seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    r.body = metrics_.render(g, executor_.node_stats());
    return r;
  }
  if (p.empty() || p[0] != "v2") return error_response(404, "no route " + request.target);
  if (p.size() == 1) {
    if (auto refused = only("GET")) return *refused;
    return json_response(200, {{"name", "dpushard"},
                               {"version", DPUSHARD_VERSION},
                               {"extensions", json::array({"binary_tensor_data"})}});
  }
  if (p.size() == 3 && p[1] == "health" && (p[2] == "live" || p[2] == "ready")) {
    if (auto refused = only("GET")) return *refused;
    if (p[2] == "live") return json_response(200, {{"live", true}});
    if (executor_.ready()) return json_response(200, {{"ready", true}});
    return json_response(503, {{"ready", false}, {"error", "the executor is not ready"}});
  }
  if (p.size() >= 3 && p.size() <= 4 && p[1] == "models") {
    if (p[2] != executor_.model().name)
      return error_response(404, "unknown model '" + p[2] + "' (this server serves '" +
                                     executor_.model().name + "')");
    if (p.size() == 3) {
      if (auto refused = only("GET")) return *refused;
      return json_response(200, model_metadata(executor_.model()));
    }
    if (p[3] == "ready") {
      if (auto refused = only("GET")) return *refused;
      if (executor_.ready()) return json_response(200, {{"name", p[2]}, {"ready", true}});
      return json_response(503, {{"name", p[2]}, {"ready", false}, {"error", "not ready"}});
    }
    if (p[3] == "infer") {
      if (auto refused = only("POST")) return *refused;
      answered_later = true;
      infer(request, respond);
      return {};
    }
  }
  return error_response(404, "no route " + request.target);
}

void OipService::infer(const HttpRequest& request, std::function<void(HttpResponse)> respond) {
  const auto arrived = Clock::now();
  auto finish = [this, arrived, respond](InferOutcome outcome, HttpResponse response) {
    metrics_.count_infer(outcome, std::chrono::duration<double>(Clock::now() - arrived).count());
    respond(std::move(response));
  };
  if (!executor_.ready())
    return finish(InferOutcome::NotReady, error_response(503, "the executor is not ready"));
  auto parsed = std::make_shared<InferRequest>();
  try {
    std::optional<std::string_view> header_length;
    if (request.inference_header_length) header_length = *request.inference_header_length;
    *parsed = parse_infer_request(executor_.model(), request.body, header_length);
  } catch (const ProtocolError& e) {
    return finish(InferOutcome::BadRequest, error_response(e.status, e.what()));
  }
  const bool queued = queue_.try_push([this, parsed, finish] {
    try {
      const std::vector<QTensor> outputs = executor_.infer(parsed->inputs);
      EncodedResponse encoded = encode_infer_response(executor_.model(), *parsed, outputs);
      HttpResponse r;
      r.body = std::move(encoded.body);
      r.inference_header_length = encoded.header_length;
      if (encoded.header_length) r.content_type = "application/octet-stream";
      finish(InferOutcome::Success, std::move(r));
    } catch (const std::exception& e) {
      spdlog::warn("serve: a frame failed: {}", e.what());
      finish(InferOutcome::Failed,
             error_response(500, std::string("inference failed: ") + e.what()));
    }
  });
  if (!queued)
    finish(InferOutcome::QueueFull,
           error_response(503, "the request queue is full (" + std::to_string(queue_.capacity()) +
                                   " waiting); retry later"));
}

}  // namespace dpushard::serve
