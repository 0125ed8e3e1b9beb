// OipService on an executor double: what a local plan cannot show (not ready, a frame that
// fails), through the same routes serve's HTTP server calls.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpushard/base/error.hpp"
#include "dpushard/serve/inference_executor.hpp"
#include "serve/oip_service.hpp"

namespace dpushard::serve {
namespace {

using nlohmann::json;

class ExecutorDouble final : public InferenceExecutor {
 public:
  ExecutorDouble() {
    model_.name = "m";
    model_.inputs = {{"x", {1, 2}, 1, RoundMode::Dpu}};
    model_.outputs = {{"y", {1, 2}, 3, RoundMode::Dpu}};
  }
  const ServedModel& model() const override { return model_; }
  bool ready() const override { return is_ready; }
  int max_in_flight() const override { return 1; }
  std::vector<QTensor> infer(const std::vector<QTensor>& inputs) override {
    if (fail) throw Error("node w1 lost");
    QTensor y{"y", {1, 2}, 3, inputs.at(0).data, true};  // echoes the int8 input
    return {y};
  }
  std::vector<NodeStats> node_stats() const override { return {{"w1", 0.5, 3, 10, 20}}; }

  std::atomic<bool> is_ready{true};
  std::atomic<bool> fail{false};

 private:
  ServedModel model_;
};

HttpResponse call(OipService& service, const std::string& method, const std::string& target,
                  const std::string& body = "") {
  std::promise<HttpResponse> answer;
  HttpRequest request;
  request.method = method;
  request.target = target;
  request.body = body;
  service.handle(request, [&](HttpResponse r) { answer.set_value(std::move(r)); });
  auto future = answer.get_future();
  EXPECT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  return future.get();
}

const std::string kInfer =
    R"({"id":"a","inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[0.5,-1.0]}]})";

TEST(OipService, NotReadyIs503OnReadinessAndInfer) {
  ExecutorDouble executor;
  OipService service(executor, "", 4);
  executor.is_ready = false;
  EXPECT_EQ(call(service, "GET", "/v2/health/live").status, 200);
  EXPECT_EQ(call(service, "GET", "/v2/health/ready").status, 503);
  EXPECT_EQ(call(service, "GET", "/v2/models/m/ready").status, 503);
  const HttpResponse r = call(service, "POST", "/v2/models/m/infer", kInfer);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(json::parse(r.body)["error"], "the executor is not ready");
  executor.is_ready = true;
  EXPECT_EQ(call(service, "GET", "/v2/health/ready").status, 200);
  const HttpResponse metrics = call(service, "GET", "/metrics");
  EXPECT_NE(metrics.body.find("dpushard_inference_requests_total{outcome=\"not_ready\"} 1"),
            std::string::npos)
      << metrics.body;
}

TEST(OipService, AFailedFrameIs500AndTheNextRuns) {
  ExecutorDouble executor;
  OipService service(executor, "", 4);
  executor.fail = true;
  HttpResponse r = call(service, "POST", "/v2/models/m/infer", kInfer);
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(json::parse(r.body)["error"], "inference failed: node w1 lost");
  executor.fail = false;
  r = call(service, "POST", "/v2/models/m/infer", kInfer);
  ASSERT_EQ(r.status, 200) << r.body;
  const json out = json::parse(r.body);
  EXPECT_EQ(out["id"], "a");
  // 0.5 and -1.0 at fix point 1 are 1 and -2; the double echoes them.
  EXPECT_EQ(out["outputs"][0]["data"], json::array({1, -2}));
  const std::string metrics = call(service, "GET", "/metrics").body;
  for (const char* line : {"dpushard_inference_failures_total 1\n",
                           "dpushard_inference_requests_total{outcome=\"success\"} 1\n",
                           "dpushard_http_requests_total{code=\"500\"} 1\n",
                           "dpushard_node_bytes_total{node=\"w1\",direction=\"out\"} 20\n",
                           "dpushard_node_frames_total{node=\"w1\"} 3\n"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line << metrics;
}

TEST(OipService, FP32InputsSaturateAndDequantizedOutputsAreExact) {
  ExecutorDouble executor;
  OipService service(executor, "", 4);
  const HttpResponse r =
      call(service, "POST", "/v2/models/m/infer",
           R"({"inputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[[1000.0, -0.25]]}],)"
           R"("outputs":[{"name":"y","parameters":{"dequantize":true}}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  const json out = json::parse(r.body)["outputs"][0];
  EXPECT_EQ(out["datatype"], "FP32");
  // 1000 saturates at 127; -0.25 * 2^1 rounds (DPU round: half up) to 0; then * 2^-3.
  EXPECT_EQ(out["data"], json::array({127 / 8.0, 0.0}));
}

}  // namespace
}  // namespace dpushard::serve
